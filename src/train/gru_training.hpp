// A GRU layer for training on oneDNN's linear-before-reset GRU: forward_training that keeps
// one workspace per call slot, and the backward that accumulates the weight gradients.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <vector>

#include "core/onednn_context.hpp"
#include "core/param_source.hpp"

namespace attnbench {

// One GruParams per direction ({forward} or {forward, backward}); `slots` forward calls can
// be kept for their backward at once (the decoder cell keeps one per decode step).
// Shapes as GruLayer: src (batch, steps, in), dst (batch, steps, dirs x hidden),
// iter (dirs, batch, hidden). Example (the decoder cell, T steps):
//   GruTraining cell(ctx, 1, B, {&model.cell}, T); cell.forward(t, x_t, s_t, s_next, scratch);
//   cell.zero_grad(); for t = T-1..0: cell.backward(t, ...); cell.store_grads({&grads.cell});
class GruTraining {
 public:
  GruTraining() = default;
  GruTraining(OneDnnContext& ctx, std::int64_t steps, std::int64_t batch, std::vector<const GruParams*> directions,
              int slots);

  // Reads the parameters again (after an optimizer changed them in place).
  void reload();
  // src_iter nullptr: zeros. Keeps what backward(slot) needs.
  void forward(int slot, const float* src, const float* src_iter, float* dst, float* dst_iter);
  // Clears the accumulated weight gradients.
  void zero_grad();
  // The backward of forward(slot, ...) with the same src, src_iter, dst, dst_iter:
  // diff_dst (like dst) and diff_dst_iter (like dst_iter; nullptr: zeros) give diff_src
  // (like src) and diff_src_iter (nullptr: not wanted); adds to the weight gradients.
  void backward(int slot, const float* src, const float* src_iter, const float* dst, const float* dst_iter,
                const float* diff_dst, const float* diff_dst_iter, float* diff_src, float* diff_src_iter);
  // Writes the accumulated gradients in PyTorch's layout (r, z, n rows) into grads[d] for direction d.
  void store_grads(const std::vector<GruParams*>& grads) const;

 private:
  OneDnnContext* ctx_ = nullptr;
  std::vector<const GruParams*> params_;
  dnnl::lbr_gru_forward forward_;
  dnnl::lbr_gru_backward backward_;
  dnnl::memory user_wl_, user_wi_, bias_, fwd_wl_, fwd_wi_, bwd_wl_, bwd_wi_;
  dnnl::memory src_, src_iter_, dst_, dst_iter_, diff_src_, diff_src_iter_, diff_dst_, diff_dst_iter_;
  dnnl::memory zero_iter_, scratch_iter_, diff_wl_, diff_wi_, diff_bias_;
  std::vector<dnnl::memory> workspaces_;
  dnnl::reorder to_fwd_wl_, to_fwd_wi_, to_bwd_wl_, to_bwd_wi_;
};

// The inverse of gru_to_onednn for gradients: oneDNN's ldigo diff weights and ldgo diff
// bias (gates u, r, o and u') of direction `dir` into PyTorch's layout (rows r, z, n).
void onednn_to_gru_grads(const float* diff_weights_layer, const float* diff_weights_iter, const float* diff_bias,
                         int dir, GruParams& grads);

}  // namespace attnbench
