#include "core/attention_stats.hpp"

#include <algorithm>
#include <cmath>

namespace attnbench {

double entropy(std::span<const double> weights) {
  double h = 0.0;
  for (double w : weights)
    if (w > 0.0) h -= w * std::log(w);
  return h;
}

double max_weight(std::span<const double> weights) {
  return weights.empty() ? 0.0 : *std::max_element(weights.begin(), weights.end());
}

}  // namespace attnbench
