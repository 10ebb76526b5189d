#include "core/gru_layer.hpp"

#include <algorithm>
#include <stdexcept>

namespace attnbench {

namespace {
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;

// oneDNN gate g (u, r, o) is PyTorch gate kTorchGate[g] (r = 0, z = 1, n = 2).
constexpr int kTorchGate[3] = {1, 0, 2};

// Writes a PyTorch (3h, in) matrix into ldigo slot `dir`: [dir][i][g][o].
void to_ldigo(const std::vector<float>& w, std::int64_t in, std::int64_t h, int dir, float* out) {
  float* base = out + static_cast<std::int64_t>(dir) * in * 3 * h;
  for (std::int64_t i = 0; i < in; ++i)
    for (int g = 0; g < 3; ++g)
      for (std::int64_t o = 0; o < h; ++o)
        base[(i * 3 + g) * h + o] = w[static_cast<std::size_t>((kTorchGate[g] * h + o) * in + i)];
}
}  // namespace

void gru_to_onednn(const GruParams& p, int dir, int, float* weights_layer, float* weights_iter, float* bias) {
  const std::int64_t h = p.hidden;
  to_ldigo(p.w_ih, p.input, h, dir, weights_layer);
  to_ldigo(p.w_hh, h, h, dir, weights_iter);
  float* b = bias + static_cast<std::int64_t>(dir) * 4 * h;
  for (std::int64_t o = 0; o < h; ++o) {
    const auto at = [&](const std::vector<float>& v, int gate) { return v[static_cast<std::size_t>(gate * h + o)]; };
    b[0 * h + o] = at(p.b_ih, 1) + at(p.b_hh, 1);  // u: z gate
    b[1 * h + o] = at(p.b_ih, 0) + at(p.b_hh, 0);  // r gate
    b[2 * h + o] = at(p.b_ih, 2);                  // o: input part of n
    b[3 * h + o] = at(p.b_hh, 2);                  // u': hidden part of n, inside r * (...)
  }
}

GruLayer::GruLayer(OneDnnContext& ctx, std::int64_t steps, std::int64_t batch,
                   const std::vector<const GruParams*>& directions)
    : ctx_(&ctx) {
  const int dirs = static_cast<int>(directions.size());
  if (dirs < 1 || dirs > 2) throw std::invalid_argument("GruLayer: one or two directions");
  const std::int64_t in = directions[0]->input, h = directions[0]->hidden;
  const md src({steps, batch, in}, dt::f32, tag::ntc);
  const md iter({1, dirs, batch, h}, dt::f32, tag::ldnc);
  const md dst({steps, batch, dirs * h}, dt::f32, tag::ntc);
  const md user_wl({1, dirs, in, 3, h}, dt::f32, tag::ldigo);
  const md user_wi({1, dirs, h, 3, h}, dt::f32, tag::ldigo);
  const md bias({1, dirs, 4, h}, dt::f32, tag::ldgo);
  const md any_wl({1, dirs, in, 3, h}, dt::f32, tag::any);
  const md any_wi({1, dirs, h, 3, h}, dt::f32, tag::any);
  const auto direction =
      dirs == 2 ? dnnl::rnn_direction::bidirectional_concat : dnnl::rnn_direction::unidirectional_left2right;
  const dnnl::lbr_gru_forward::primitive_desc pd(
      dnnl::lbr_gru_forward::desc(dnnl::prop_kind::forward_inference, direction, src, iter, any_wl, any_wi, bias,
                                  dst, iter),
      ctx.engine());
  primitive_ = dnnl::lbr_gru_forward(pd);

  dnnl::memory wl(user_wl, ctx.engine()), wi(user_wi, ctx.engine());
  bias_ = dnnl::memory(bias, ctx.engine());
  for (int d = 0; d < dirs; ++d)
    gru_to_onednn(*directions[static_cast<std::size_t>(d)], d, dirs, static_cast<float*>(wl.get_data_handle()),
                  static_cast<float*>(wi.get_data_handle()), static_cast<float*>(bias_.get_data_handle()));
  weights_layer_ = reorder_into(ctx, wl, pd.weights_layer_desc());
  weights_iter_ = reorder_into(ctx, wi, pd.weights_iter_desc());

  scratch_iter_ = dnnl::memory(iter, ctx.engine());
  zero_iter_ = dnnl::memory(iter, ctx.engine());
  std::fill_n(static_cast<float*>(zero_iter_.get_data_handle()), dirs * batch * h, 0.f);
  src_ = dnnl::memory(src, ctx.engine(), DNNL_MEMORY_NONE);
  src_iter_ = dnnl::memory(iter, ctx.engine(), DNNL_MEMORY_NONE);
  dst_ = dnnl::memory(dst, ctx.engine(), DNNL_MEMORY_NONE);
  dst_iter_ = dnnl::memory(iter, ctx.engine(), DNNL_MEMORY_NONE);
  if (pd.workspace_desc().get_size() != 0) throw std::logic_error("GruLayer: inference needs no workspace");
}

void GruLayer::run(const float* src, const float* src_iter, float* dst, float* dst_iter) {
  src_.set_data_handle(const_cast<float*>(src));
  dst_.set_data_handle(dst);
  ExecArgs args{{DNNL_ARG_SRC_LAYER, src_},
                {DNNL_ARG_WEIGHTS_LAYER, weights_layer_},
                {DNNL_ARG_WEIGHTS_ITER, weights_iter_},
                {DNNL_ARG_BIAS, bias_},
                {DNNL_ARG_DST_LAYER, dst_}};
  if (src_iter) {
    src_iter_.set_data_handle(const_cast<float*>(src_iter));
    args.emplace(DNNL_ARG_SRC_ITER, src_iter_);
  } else {
    args.emplace(DNNL_ARG_SRC_ITER, zero_iter_);
  }
  args.emplace(DNNL_ARG_DST_ITER, dst_iter ? dst_iter_ : scratch_iter_);
  if (dst_iter) dst_iter_.set_data_handle(dst_iter);
  primitive_.execute(ctx_->stream(), args);
  ctx_->stream().wait();
}

}  // namespace attnbench
