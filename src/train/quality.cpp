#include "train/quality.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "train/cross_entropy.hpp"

namespace attnbench {

namespace {
double mean(double sum, std::int64_t count) {
  return count == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(count);
}
}  // namespace

void QualitySums::add(const Batch& batch, std::span<const float> logits, std::span<const float> alphas,
                      std::int64_t vocab) {
  const std::int64_t B = batch.batch, L = batch.src_len, T = batch.tgt_len;
  for (std::int64_t b = 0; b < batch.examples; ++b) {
    const std::int64_t len = batch.lengths[static_cast<std::size_t>(b)];
    bool all_right = true;
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t target = batch.targets[static_cast<std::size_t>(b * T + t)];
      if (target == kIgnoreTarget) break;
      const float* z = logits.data() + (t * B + b) * vocab;
      const float top = *std::max_element(z, z + vocab);
      double sum = 0;
      for (std::int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(z[v]) - top);
      loss_ += std::log(sum) + top - z[target];
      const bool right = std::max_element(z, z + vocab) - z == target;
      right_tokens_ += right;
      all_right &= right;
      ++tokens_;

      const float* a = alphas.data() + (t * B + b) * L;
      if (len >= 2) {
        double h = 0;
        for (std::int64_t j = 0; j < len; ++j)
          if (a[j] > 0) h -= static_cast<double>(a[j]) * std::log(static_cast<double>(a[j]));
        entropy_norm_ += h / std::log(static_cast<double>(len));
        ++entropy_steps_;
      }
      if (t >= 1) {
        const float* prev = a - B * L;
        double tv = 0;
        for (std::int64_t j = 0; j < len; ++j) tv += std::abs(static_cast<double>(a[j]) - prev[j]);
        drift_ += 0.5 * tv;
        ++drift_steps_;
      }
      const std::int64_t gold = batch.gold_pos[static_cast<std::size_t>(b * T + t)];
      if (gold >= 0) {
        aligned_ += std::max_element(a, a + len) - a == gold;
        gold_mass_ += a[gold];
        ++aligned_positions_;
      }
    }
    right_examples_ += all_right;
    ++examples_;
  }
}

Quality QualitySums::means() const {
  return {mean(loss_, tokens_),
          mean(static_cast<double>(right_tokens_), tokens_),
          mean(static_cast<double>(right_examples_), examples_),
          mean(static_cast<double>(aligned_), aligned_positions_),
          mean(gold_mass_, aligned_positions_),
          mean(entropy_norm_, entropy_steps_),
          mean(drift_, drift_steps_)};
}

}  // namespace attnbench
