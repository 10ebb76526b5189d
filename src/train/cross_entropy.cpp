#include "train/cross_entropy.hpp"

#include <algorithm>
#include <cmath>

namespace attnbench {

CrossEntropy::CrossEntropy(OneDnnContext& ctx, std::int64_t rows, std::int64_t vocab)
    : ctx_(&ctx), rows_(rows), vocab_(vocab), log_probs_data_(static_cast<std::size_t>(rows * vocab)) {
  const dnnl::memory::desc desc = plain_desc({rows, vocab});
  logsoftmax_ = dnnl::logsoftmax_forward(dnnl::logsoftmax_forward::primitive_desc(
      dnnl::logsoftmax_forward::desc(dnnl::prop_kind::forward_training, desc, 1), ctx.engine()));
  logits_ = dnnl::memory(desc, ctx.engine(), DNNL_MEMORY_NONE);
  log_probs_ = dnnl::memory(desc, ctx.engine(), log_probs_data_.data());
}

double CrossEntropy::forward(const float* logits, const std::int64_t* targets) {
  logits_.set_data_handle(const_cast<float*>(logits));
  logsoftmax_.execute(ctx_->stream(), {{DNNL_ARG_SRC, logits_}, {DNNL_ARG_DST, log_probs_}});
  ctx_->stream().wait();
  double sum = 0.0;
  counted_ = 0;
  for (std::int64_t r = 0; r < rows_; ++r) {
    if (targets[r] == kIgnoreTarget) continue;
    sum -= log_probs_data_[static_cast<std::size_t>(r * vocab_ + targets[r])];
    ++counted_;
  }
  return counted_ ? sum / static_cast<double>(counted_) : 0.0;
}

void CrossEntropy::backward(const std::int64_t* targets, float* dlogits) const {
  const float scale = counted_ ? 1.f / static_cast<float>(counted_) : 0.f;
#pragma omp parallel for schedule(static) if (rows_ * vocab_ >= 64 * 1024)
  for (std::int64_t r = 0; r < rows_; ++r) {
    float* d = dlogits + r * vocab_;
    const float* lp = log_probs_data_.data() + r * vocab_;
    if (targets[r] == kIgnoreTarget) {
      std::fill_n(d, vocab_, 0.f);
      continue;
    }
    for (std::int64_t v = 0; v < vocab_; ++v) d[v] = std::exp(lp[v]) * scale;
    d[targets[r]] -= scale;
  }
}

}  // namespace attnbench
