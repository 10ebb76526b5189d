#include "train/attend_training.hpp"

#include <algorithm>
#include <limits>

namespace attnbench {

AttendTraining::AttendTraining(OneDnnContext& ctx, std::int64_t batch, std::int64_t src_len, std::int64_t enc_dim,
                               std::int64_t steps, std::vector<std::int64_t> lengths)
    : ctx_(&ctx), batch_(batch), src_len_(src_len), lengths_(std::move(lengths)),
      dalpha_(static_cast<std::size_t>(batch * src_len)) {
  using dt = dnnl::memory::data_type;
  const std::int64_t B = batch, L = src_len, E = enc_dim, T = steps;
  const dnnl::memory::desc rows = plain_desc({B, L});
  const dnnl::softmax_forward::primitive_desc fwd_pd(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, rows, 1), ctx.engine());
  softmax_ = dnnl::softmax_forward(fwd_pd);
  softmax_back_ = dnnl::softmax_backward(
      dnnl::softmax_backward::primitive_desc(dnnl::softmax_backward::desc(rows, rows, 1), ctx.engine(), fwd_pd));
  scores_ = dnnl::memory(rows, ctx.engine(), DNNL_MEMORY_NONE);
  weights_ = dnnl::memory(rows, ctx.engine(), DNNL_MEMORY_NONE);
  diff_weights_ = dnnl::memory(rows, ctx.engine(), DNNL_MEMORY_NONE);
  diff_scores_ = dnnl::memory(rows, ctx.engine(), DNNL_MEMORY_NONE);
  context_ = MatmulOp(ctx, plain_desc({B, 1, L}), plain_desc({B, L, E}), plain_desc({B, 1, E}));
  // dalpha (B, 1, L) = dc (B, 1, E) x H^T, H (B, L, E) read as (B, E, L).
  const dnnl::memory::desc H_t({B, E, L}, dt::f32, dnnl::memory::dims{L * E, 1, E});
  weights_grad_ = MatmulOp(ctx, plain_desc({B, 1, E}), H_t, plain_desc({B, 1, L}));
  // dH (B, L, E) = alphas (T, B, L) read as (B, L, T) x dcontexts (T, B, E) read as (B, T, E).
  const dnnl::memory::desc alphas_t({B, L, T}, dt::f32, dnnl::memory::dims{L, 1, B * L});
  const dnnl::memory::desc dcontexts({B, T, E}, dt::f32, dnnl::memory::dims{E, B * E, 1});
  annotations_grad_ = MatmulOp(ctx, alphas_t, dcontexts, plain_desc({B, L, E}));
}

void AttendTraining::set_lengths(std::span<const std::int64_t> lengths) {
  std::copy(lengths.begin(), lengths.end(), lengths_.begin());
}

void AttendTraining::bind_annotations(const float* H) {
  H_ = H;
  context_.bind_weights(H);
}

void AttendTraining::forward(float* e, float* alpha, float* c) {
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();
  for (std::int64_t b = 0; b < batch_; ++b)
    std::fill(e + b * src_len_ + lengths_[static_cast<std::size_t>(b)], e + (b + 1) * src_len_, minus_inf);
  scores_.set_data_handle(e);
  weights_.set_data_handle(alpha);
  softmax_.execute(ctx_->stream(), {{DNNL_ARG_SRC, scores_}, {DNNL_ARG_DST, weights_}});
  ctx_->stream().wait();
  for (std::int64_t b = 0; b < batch_; ++b)
    std::fill(alpha + b * src_len_ + lengths_[static_cast<std::size_t>(b)], alpha + (b + 1) * src_len_, 0.f);
  context_.run_with_bound_weights(alpha, c);
}

void AttendTraining::backward_step(const float* alpha, const float* dc, float* de) {
  weights_grad_.run(dc, H_, dalpha_.data());
  weights_.set_data_handle(const_cast<float*>(alpha));
  diff_weights_.set_data_handle(dalpha_.data());
  diff_scores_.set_data_handle(de);
  softmax_back_.execute(ctx_->stream(),
                        {{DNNL_ARG_DST, weights_}, {DNNL_ARG_DIFF_DST, diff_weights_}, {DNNL_ARG_DIFF_SRC, diff_scores_}});
  ctx_->stream().wait();
}

void AttendTraining::backward_annotations(const float* alphas, const float* dcontexts, float* dH) {
  annotations_grad_.run(alphas, dcontexts, dH);
}

}  // namespace attnbench
