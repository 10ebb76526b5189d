// Masked softmax over the source positions and the context vector c = alpha H.
#pragma once

#include <cstdint>
#include <vector>

#include "core/matmul_op.hpp"
#include "core/onednn_context.hpp"

namespace attnbench {

// For scores e (B, L) and annotations H (B, L, E): positions j >= lengths[b] get
// score -inf and weight exactly 0; alpha = softmax over the rest; c = alpha H (B, E).
class Attend {
 public:
  Attend() = default;
  Attend(OneDnnContext& ctx, std::int64_t batch, std::int64_t src_len, std::int64_t enc_dim,
         std::vector<std::int64_t> lengths);

  // Sets the scores of padded positions to -inf in place.
  void mask(float* e) const;
  // Writes alpha (B, L) = softmax over the valid positions of `logits`; padded positions get 0.
  void softmax(const float* logits, float* alpha);
  // Binds the annotations H (B, L, E) for context(); bind again when H changes (on a bf16
  // context H is converted here, once per sequence, not at every step).
  void bind_annotations(const float* H);
  // Writes c (B, E) = alpha (B, 1, L) x H (B, L, E), H the bound annotations.
  void context(const float* alpha, float* c);

 private:
  OneDnnContext* ctx_ = nullptr;
  std::int64_t batch_ = 0, src_len_ = 0;
  std::vector<std::int64_t> lengths_;
  bool masked_ = false;
  dnnl::softmax_forward softmax_;
  std::vector<float> masked_logits_;
  dnnl::memory scores_, weights_;
  ExecArgs softmax_args_;  // built once: the map is not rebuilt (allocated) per call
  MatmulOp context_;
};

}  // namespace attnbench
