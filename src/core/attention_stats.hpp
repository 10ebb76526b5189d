// Shape statistics of one attention distribution (a row of weights that sums to 1).
#pragma once

#include <span>

namespace attnbench {

// Shannon entropy in nats, -sum w log w, with 0 log 0 = 0. Example: uniform over 4 -> ln 4.
double entropy(std::span<const double> weights);

// The largest weight.
double max_weight(std::span<const double> weights);

}  // namespace attnbench
