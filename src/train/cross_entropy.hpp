// Mean cross-entropy over the vocabulary, like F.cross_entropy (ignore_index -100).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <vector>

#include "core/onednn_context.hpp"

namespace attnbench {

// Targets equal to this are skipped (PyTorch's default ignore_index): a padded target.
inline constexpr std::int64_t kIgnoreTarget = -100;

// Loss = mean over rows whose target is not kIgnoreTarget of -log softmax(logits)[target];
// the log-softmax is oneDNN's. Example: CrossEntropy ce(ctx, T * B, V); ce.forward(logits, gold);
class CrossEntropy {
 public:
  CrossEntropy() = default;
  CrossEntropy(OneDnnContext& ctx, std::int64_t rows, std::int64_t vocab);

  // logits (rows, vocab), targets (rows); returns the loss (0 when every target is ignored).
  double forward(const float* logits, const std::int64_t* targets);
  // dLoss/dlogits (rows, vocab) of the last forward: (softmax - one_hot(target)) / counted rows.
  void backward(const std::int64_t* targets, float* dlogits) const;

 private:
  OneDnnContext* ctx_ = nullptr;
  std::int64_t rows_ = 0, vocab_ = 0, counted_ = 0;
  dnnl::logsoftmax_forward logsoftmax_;
  dnnl::memory logits_, log_probs_;
  std::vector<float> log_probs_data_;
};

}  // namespace attnbench
