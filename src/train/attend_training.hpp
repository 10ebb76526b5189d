// Masked softmax and context c = alpha H for training: forward, and backward on oneDNN.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "core/matmul_op.hpp"
#include "core/onednn_context.hpp"

namespace attnbench {

// Sizes: scores and weights (B, L), H (B, L, E), context (B, E); a decode of T steps keeps
// every step's weights as (T, B, L) and their context gradients as (T, B, E).
class AttendTraining {
 public:
  AttendTraining() = default;
  AttendTraining(OneDnnContext& ctx, std::int64_t batch, std::int64_t src_len, std::int64_t enc_dim,
                 std::int64_t steps, std::vector<std::int64_t> lengths);

  // Sets the valid length of each example (B values) for the calls that follow; allocates nothing.
  void set_lengths(std::span<const std::int64_t> lengths);
  // Binds H for the calls that follow.
  void bind_annotations(const float* H);
  // Sets e's padded positions to -inf, writes alpha = softmax(e) (padded: exactly 0) and c = alpha H.
  void forward(float* e, float* alpha, float* c);
  // One step's backward: dalpha = dc H^T, then de = softmax backward (padded positions get 0).
  void backward_step(const float* alpha, const float* dc, float* de);
  // dH = sum over the T steps of alpha_t^T dc_t (written), one batched matmul.
  void backward_annotations(const float* alphas, const float* dcontexts, float* dH);

 private:
  OneDnnContext* ctx_ = nullptr;
  std::int64_t batch_ = 0, src_len_ = 0;
  std::vector<std::int64_t> lengths_;
  dnnl::softmax_forward softmax_;
  dnnl::softmax_backward softmax_back_;
  dnnl::memory scores_, weights_, diff_weights_, diff_scores_;
  MatmulOp context_, weights_grad_, annotations_grad_;
  const float* H_ = nullptr;
  std::vector<float> dalpha_;
};

}  // namespace attnbench
