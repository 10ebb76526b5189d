#include "core/attend.hpp"

#include <algorithm>
#include <limits>

namespace attnbench {

Attend::Attend(OneDnnContext& ctx, std::int64_t batch, std::int64_t src_len, std::int64_t enc_dim,
               std::vector<std::int64_t> lengths)
    : ctx_(&ctx), batch_(batch), src_len_(src_len), lengths_(std::move(lengths)) {
  masked_ = std::any_of(lengths_.begin(), lengths_.end(), [&](std::int64_t n) { return n < src_len; });
  if (masked_) masked_logits_.resize(static_cast<std::size_t>(batch * src_len));
  const dnnl::memory::desc rows = plain_desc({batch, src_len});
  softmax_ = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, rows, 1), ctx.engine()));
  scores_ = dnnl::memory(rows, ctx.engine(), DNNL_MEMORY_NONE);
  weights_ = dnnl::memory(rows, ctx.engine(), DNNL_MEMORY_NONE);
  softmax_args_ = {{DNNL_ARG_SRC, scores_}, {DNNL_ARG_DST, weights_}};
  context_ = MatmulOp(ctx, plain_desc({batch, 1, src_len}), plain_desc({batch, src_len, enc_dim}),
                      plain_desc({batch, 1, enc_dim}));
}

void Attend::mask(float* e) const {
  constexpr float minus_inf = -std::numeric_limits<float>::infinity();
  if (masked_)
    for (std::int64_t b = 0; b < batch_; ++b)
      std::fill(e + b * src_len_ + lengths_[static_cast<std::size_t>(b)], e + (b + 1) * src_len_, minus_inf);
}

void Attend::softmax(const float* logits, float* alpha) {
  if (masked_) {
    std::copy_n(logits, masked_logits_.size(), masked_logits_.data());
    mask(masked_logits_.data());
    logits = masked_logits_.data();
  }
  scores_.set_data_handle(const_cast<float*>(logits));
  weights_.set_data_handle(alpha);
  softmax_.execute(ctx_->stream(), softmax_args_);
  ctx_->stream().wait();
  // Padded positions must carry exactly zero mass, whatever exp(-inf) rounds to.
  if (masked_)
    for (std::int64_t b = 0; b < batch_; ++b)
      std::fill(alpha + b * src_len_ + lengths_[static_cast<std::size_t>(b)], alpha + (b + 1) * src_len_, 0.f);
}

void Attend::bind_annotations(const float* H) { context_.bind_weights(H); }

void Attend::context(const float* alpha, float* c) { context_.run_with_bound_weights(alpha, c); }

}  // namespace attnbench
