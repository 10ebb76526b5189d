#include "train/gru_training.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/gru_layer.hpp"

namespace attnbench {

namespace {
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;

constexpr int kTorchGate[3] = {1, 0, 2};  // oneDNN gate (u, r, o) -> PyTorch gate (r = 0, z = 1, n = 2)

float* data(const dnnl::memory& m) { return static_cast<float*>(m.get_data_handle()); }

void zero(const dnnl::memory& m) { std::memset(m.get_data_handle(), 0, m.get_desc().get_size()); }

// Reads ldigo slot `dir` back into a PyTorch (3h, in) matrix.
void from_ldigo(const float* in_ldigo, std::int64_t in, std::int64_t h, int dir, std::vector<float>& w) {
  const float* base = in_ldigo + static_cast<std::int64_t>(dir) * in * 3 * h;
  for (std::int64_t i = 0; i < in; ++i)
    for (int g = 0; g < 3; ++g)
      for (std::int64_t o = 0; o < h; ++o)
        w[static_cast<std::size_t>((kTorchGate[g] * h + o) * in + i)] = base[(i * 3 + g) * h + o];
}
}  // namespace

void onednn_to_gru_grads(const float* diff_weights_layer, const float* diff_weights_iter, const float* diff_bias,
                         int dir, GruParams& grads) {
  const std::int64_t h = grads.hidden;
  from_ldigo(diff_weights_layer, grads.input, h, dir, grads.w_ih);
  from_ldigo(diff_weights_iter, h, h, dir, grads.w_hh);
  const float* b = diff_bias + static_cast<std::int64_t>(dir) * 4 * h;
  for (std::int64_t o = 0; o < h; ++o) {
    const auto at = [&](std::vector<float>& v, int gate) -> float& { return v[static_cast<std::size_t>(gate * h + o)]; };
    at(grads.b_ih, 1) = at(grads.b_hh, 1) = b[0 * h + o];  // u = b_ih_z + b_hh_z
    at(grads.b_ih, 0) = at(grads.b_hh, 0) = b[1 * h + o];  // r = b_ih_r + b_hh_r
    at(grads.b_ih, 2) = b[2 * h + o];                      // o = b_ih_n
    at(grads.b_hh, 2) = b[3 * h + o];                      // u' = b_hh_n
  }
}

GruTraining::GruTraining(OneDnnContext& ctx, std::int64_t steps, std::int64_t batch,
                         std::vector<const GruParams*> directions, int slots)
    : ctx_(&ctx), params_(std::move(directions)) {
  const int dirs = static_cast<int>(params_.size());
  if (dirs < 1 || dirs > 2) throw std::invalid_argument("GruTraining: one or two directions");
  const std::int64_t in = params_[0]->input, h = params_[0]->hidden;
  const md src({steps, batch, in}, dt::f32, tag::ntc);
  const md iter({1, dirs, batch, h}, dt::f32, tag::ldnc);
  const md dst({steps, batch, dirs * h}, dt::f32, tag::ntc);
  const md plain_wl({1, dirs, in, 3, h}, dt::f32, tag::ldigo);
  const md plain_wi({1, dirs, h, 3, h}, dt::f32, tag::ldigo);
  const md bias({1, dirs, 4, h}, dt::f32, tag::ldgo);
  const md any_wl({1, dirs, in, 3, h}, dt::f32, tag::any);
  const md any_wi({1, dirs, h, 3, h}, dt::f32, tag::any);
  const auto direction =
      dirs == 2 ? dnnl::rnn_direction::bidirectional_concat : dnnl::rnn_direction::unidirectional_left2right;
  const dnnl::lbr_gru_forward::primitive_desc fwd_pd(
      dnnl::lbr_gru_forward::desc(dnnl::prop_kind::forward_training, direction, src, iter, any_wl, any_wi, bias, dst,
                                  iter),
      ctx.engine());
  const dnnl::lbr_gru_backward::primitive_desc bwd_pd(
      dnnl::lbr_gru_backward::desc(dnnl::prop_kind::backward, direction, src, iter, any_wl, any_wi, bias, dst, iter,
                                   src, iter, plain_wl, plain_wi, bias, dst, iter),
      ctx.engine(), fwd_pd);
  forward_ = dnnl::lbr_gru_forward(fwd_pd);
  backward_ = dnnl::lbr_gru_backward(bwd_pd);

  dnnl::engine& e = ctx.engine();
  user_wl_ = dnnl::memory(plain_wl, e);
  user_wi_ = dnnl::memory(plain_wi, e);
  bias_ = dnnl::memory(bias, e);
  fwd_wl_ = dnnl::memory(fwd_pd.weights_layer_desc(), e);
  fwd_wi_ = dnnl::memory(fwd_pd.weights_iter_desc(), e);
  bwd_wl_ = dnnl::memory(bwd_pd.weights_layer_desc(), e);
  bwd_wi_ = dnnl::memory(bwd_pd.weights_iter_desc(), e);
  to_fwd_wl_ = dnnl::reorder(user_wl_, fwd_wl_);
  to_fwd_wi_ = dnnl::reorder(user_wi_, fwd_wi_);
  to_bwd_wl_ = dnnl::reorder(user_wl_, bwd_wl_);
  to_bwd_wi_ = dnnl::reorder(user_wi_, bwd_wi_);
  diff_wl_ = dnnl::memory(bwd_pd.diff_weights_layer_desc(), e);
  diff_wi_ = dnnl::memory(bwd_pd.diff_weights_iter_desc(), e);
  diff_bias_ = dnnl::memory(bwd_pd.diff_bias_desc(), e);
  if (diff_wl_.get_desc() != plain_wl || diff_wi_.get_desc() != plain_wi)
    throw std::logic_error("GruTraining: oneDNN chose non-ldigo diff weights");

  src_ = dnnl::memory(src, e, DNNL_MEMORY_NONE);
  src_iter_ = dnnl::memory(iter, e, DNNL_MEMORY_NONE);
  dst_ = dnnl::memory(dst, e, DNNL_MEMORY_NONE);
  dst_iter_ = dnnl::memory(iter, e, DNNL_MEMORY_NONE);
  diff_src_ = dnnl::memory(src, e, DNNL_MEMORY_NONE);
  diff_src_iter_ = dnnl::memory(iter, e, DNNL_MEMORY_NONE);
  diff_dst_ = dnnl::memory(dst, e, DNNL_MEMORY_NONE);
  diff_dst_iter_ = dnnl::memory(iter, e, DNNL_MEMORY_NONE);
  zero_iter_ = dnnl::memory(iter, e);
  scratch_iter_ = dnnl::memory(iter, e);
  zero(zero_iter_);
  for (int s = 0; s < slots; ++s) workspaces_.emplace_back(fwd_pd.workspace_desc(), e);
  reload();
}

void GruTraining::reload() {
  const int dirs = static_cast<int>(params_.size());
  for (int d = 0; d < dirs; ++d)
    gru_to_onednn(*params_[static_cast<std::size_t>(d)], d, dirs, data(user_wl_), data(user_wi_), data(bias_));
  dnnl::stream& s = ctx_->stream();
  to_fwd_wl_.execute(s, user_wl_, fwd_wl_);
  to_fwd_wi_.execute(s, user_wi_, fwd_wi_);
  to_bwd_wl_.execute(s, user_wl_, bwd_wl_);
  to_bwd_wi_.execute(s, user_wi_, bwd_wi_);
  s.wait();
}

void GruTraining::forward(int slot, const float* src, const float* src_iter, float* dst, float* dst_iter) {
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  if (src_iter) src_iter_.set_data_handle(const_cast<float*>(src_iter));
  if (dst_iter) dst_iter_.set_data_handle(dst_iter);
  forward_.execute(ctx_->stream(), {{DNNL_ARG_SRC_LAYER, src_},
                                    {DNNL_ARG_SRC_ITER, src_iter ? src_iter_ : zero_iter_},
                                    {DNNL_ARG_WEIGHTS_LAYER, fwd_wl_},
                                    {DNNL_ARG_WEIGHTS_ITER, fwd_wi_},
                                    {DNNL_ARG_BIAS, bias_},
                                    {DNNL_ARG_DST_LAYER, dst_},
                                    {DNNL_ARG_DST_ITER, dst_iter ? dst_iter_ : scratch_iter_},
                                    {DNNL_ARG_WORKSPACE, workspaces_[static_cast<std::size_t>(slot)]}});
  ctx_->stream().wait();
}

void GruTraining::zero_grad() {
  zero(diff_wl_);
  zero(diff_wi_);
  zero(diff_bias_);
}

void GruTraining::backward(int slot, const float* src, const float* src_iter, const float* dst,
                           const float* dst_iter, const float* diff_dst, const float* diff_dst_iter, float* diff_src,
                           float* diff_src_iter) {
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(const_cast<float*>(dst));
  dst_iter_.set_data_handle(const_cast<float*>(dst_iter));
  if (src_iter) src_iter_.set_data_handle(const_cast<float*>(src_iter));
  diff_dst_.set_data_handle(const_cast<float*>(diff_dst));
  if (diff_dst_iter) diff_dst_iter_.set_data_handle(const_cast<float*>(diff_dst_iter));
  diff_src_.set_data_handle(diff_src);
  if (diff_src_iter) diff_src_iter_.set_data_handle(diff_src_iter);
  backward_.execute(ctx_->stream(), {{DNNL_ARG_SRC_LAYER, src_},
                                     {DNNL_ARG_SRC_ITER, src_iter ? src_iter_ : zero_iter_},
                                     {DNNL_ARG_WEIGHTS_LAYER, bwd_wl_},
                                     {DNNL_ARG_WEIGHTS_ITER, bwd_wi_},
                                     {DNNL_ARG_BIAS, bias_},
                                     {DNNL_ARG_DST_LAYER, dst_},
                                     {DNNL_ARG_DST_ITER, dst_iter_},
                                     {DNNL_ARG_DIFF_DST_LAYER, diff_dst_},
                                     {DNNL_ARG_DIFF_DST_ITER, diff_dst_iter ? diff_dst_iter_ : zero_iter_},
                                     {DNNL_ARG_WORKSPACE, workspaces_[static_cast<std::size_t>(slot)]},
                                     {DNNL_ARG_DIFF_SRC_LAYER, diff_src_},
                                     {DNNL_ARG_DIFF_SRC_ITER, diff_src_iter ? diff_src_iter_ : scratch_iter_},
                                     {DNNL_ARG_DIFF_WEIGHTS_LAYER, diff_wl_},
                                     {DNNL_ARG_DIFF_WEIGHTS_ITER, diff_wi_},
                                     {DNNL_ARG_DIFF_BIAS, diff_bias_}});
  ctx_->stream().wait();
}

void GruTraining::store_grads(const std::vector<GruParams*>& grads) const {
  for (std::size_t d = 0; d < grads.size(); ++d)
    onednn_to_gru_grads(data(diff_wl_), data(diff_wi_), data(diff_bias_), static_cast<int>(d), *grads[d]);
}

}  // namespace attnbench
