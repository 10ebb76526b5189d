// A one-layer GRU (uni- or bidirectional) on oneDNN's linear-before-reset GRU,
// which computes exactly PyTorch's nn.GRU / nn.GRUCell equations.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "core/onednn_context.hpp"
#include "core/param_source.hpp"

namespace attnbench {

class GruLayer {
 public:
  GruLayer() = default;
  // One GruParams per direction: {forward} or {forward, backward} (outputs concatenated).
  GruLayer(OneDnnContext& ctx, std::int64_t steps, std::int64_t batch, const std::vector<const GruParams*>& directions);

  // src: (batch, steps, input); src_iter: (directions, batch, hidden) or nullptr for zeros;
  // dst: (batch, steps, directions x hidden); dst_iter: (directions, batch, hidden) or nullptr.
  void run(const float* src, const float* src_iter, float* dst, float* dst_iter);

 private:
  OneDnnContext* ctx_ = nullptr;
  dnnl::lbr_gru_forward primitive_;
  dnnl::memory src_, src_iter_, dst_, dst_iter_, weights_layer_, weights_iter_, bias_, zero_iter_, scratch_iter_;
};

// Converts PyTorch's (r, z, n) GRU parameters into oneDNN's lbr_gru layouts for
// direction `dir` of `dirs`: weights_layer ldigo, weights_iter ldigo, bias ldgo
// with the gates (u = z, r, o = n) and the fourth bias b_hn.
void gru_to_onednn(const GruParams& p, int dir, int dirs, float* weights_layer, float* weights_iter, float* bias);

}  // namespace attnbench
