// Robust summaries of repeated measurements and the significance test `compare` uses.
#pragma once

#include <cstddef>
#include <span>

namespace attnbench {

// Summary of one sample. stddev is the sample (n - 1) standard deviation, 0 for n = 1;
// cv = stddev / mean (0 when mean is 0). An empty sample gives count 0 and NaN elsewhere.
struct SampleStats {
  std::size_t count = 0;
  double median = 0.0, mean = 0.0, stddev = 0.0, cv = 0.0, min = 0.0, max = 0.0;
};

// Summarizes a sample. Example: summarize({3, 1, 2, 10}) has median 2.5, mean 4, min 1, max 10.
SampleStats summarize(std::span<const double> sample);

// Returns the two-sided p-value of the Mann-Whitney U test that a and b come from the
// same distribution. Without ties and with both sizes <= 20 the exact null distribution
// of U is used (arrangements counted by dynamic programming); otherwise the normal
// approximation with tie and continuity correction. The result is clamped to [0, 1];
// it is 1 when every value is tied and NaN when a or b is empty.
// Example: mann_whitney_p({1,2,3,4,5}, {6,7,8,9,10}) == 2.0 / 252.
double mann_whitney_p(std::span<const double> a, std::span<const double> b);

// Returns exp(mean(log x)). NaN when the sample is empty or holds a value that is
// not finite and > 0. Example: geometric_mean({1, 4}) == 2.
double geometric_mean(std::span<const double> sample);

}  // namespace attnbench
