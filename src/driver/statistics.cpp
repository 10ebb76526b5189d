#include "driver/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

namespace attnbench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Largest sample size for which the exact distribution of U is computed.
constexpr std::size_t kExactMaxSize = 20;

// Returns the number of arrangements of n1 values of `a` and n2 values of `b` (all
// distinct) whose U_a (pairs with a > b) equals u, for u = 0..n1*n2. Recurrence on the
// largest element: it is an `a` (beating all j `b`s) or a `b`:
//   f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u),  f(0, j, 0) = f(i, 0, 0) = 1.
// Counts reach C(40, 20) ~ 1.4e11 at most, exact in uint64.
std::vector<std::uint64_t> u_counts(std::size_t n1, std::size_t n2) {
  const std::size_t width = n1 * n2 + 1;
  // prev[j * width + u] = f(i-1, j, u); cur likewise for i.
  std::vector<std::uint64_t> prev((n2 + 1) * width, 0), cur(prev.size(), 0);
  for (std::size_t j = 0; j <= n2; ++j) prev[j * width] = 1;  // i = 0
  for (std::size_t i = 1; i <= n1; ++i) {
    std::fill(cur.begin(), cur.end(), 0);
    cur[0] = 1;  // j = 0
    for (std::size_t j = 1; j <= n2; ++j)
      for (std::size_t u = 0; u < width; ++u)
        cur[j * width + u] = (u >= j ? prev[j * width + u - j] : 0) + cur[(j - 1) * width + u];
    std::swap(prev, cur);
  }
  return {prev.begin() + static_cast<std::ptrdiff_t>(n2 * width), prev.end()};
}

double normal_upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

SampleStats summarize(std::span<const double> sample) {
  SampleStats s;
  s.count = sample.size();
  if (sample.empty()) {
    s.median = s.mean = s.stddev = s.cv = s.min = s.max = kNaN;
    return s;
  }
  std::vector<double> sorted(sample.begin(), sample.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  double squares = 0.0;
  for (double x : sorted) squares += (x - s.mean) * (x - s.mean);
  s.stddev = n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0.0;
  s.cv = s.mean != 0.0 ? s.stddev / s.mean : 0.0;
  return s;
}

double mann_whitney_p(std::span<const double> a, std::span<const double> b) {
  const std::size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return kNaN;

  // Midranks of the pooled sample; tie groups feed the variance correction.
  std::vector<std::pair<double, bool>> pooled;  // (value, is from a)
  for (double x : a) pooled.emplace_back(x, true);
  for (double x : b) pooled.emplace_back(x, false);
  std::sort(pooled.begin(), pooled.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  const std::size_t n = pooled.size();
  double rank_sum_a = 0.0, tie_term = 0.0;  // tie_term = sum over groups of t^3 - t
  for (std::size_t start = 0; start < n;) {
    std::size_t end = start;
    while (end < n && pooled[end].first == pooled[start].first) ++end;
    const double midrank = 0.5 * static_cast<double>(start + 1 + end);  // ranks start+1..end
    for (std::size_t k = start; k < end; ++k)
      if (pooled[k].second) rank_sum_a += midrank;
    const double t = static_cast<double>(end - start);
    tie_term += t * t * t - t;
    start = end;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2);
  const double u = rank_sum_a - d1 * (d1 + 1.0) / 2.0;  // U of a: pairs with a > b, ties count 1/2

  if (tie_term == 0.0 && n1 <= kExactMaxSize && n2 <= kExactMaxSize) {
    const std::vector<std::uint64_t> counts = u_counts(n1, n2);
    const auto observed = static_cast<std::size_t>(std::llround(u));
    std::uint64_t at_most = 0, at_least = 0, total = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
      total += counts[k];
      if (k <= observed) at_most += counts[k];
      if (k >= observed) at_least += counts[k];
    }
    const double tail = static_cast<double>(std::min(at_most, at_least)) / static_cast<double>(total);
    return std::min(1.0, 2.0 * tail);
  }

  const double dn = static_cast<double>(n);
  const double mean = d1 * d2 / 2.0;
  const double variance = d1 * d2 / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0)));
  if (variance <= 0.0) return 1.0;  // every value tied: no evidence of a difference
  const double z = (std::abs(u - mean) - 0.5) / std::sqrt(variance);
  return std::clamp(2.0 * normal_upper_tail(z), 0.0, 1.0);
}

double geometric_mean(std::span<const double> sample) {
  if (sample.empty()) return kNaN;
  double log_sum = 0.0;
  for (double x : sample) {
    if (!(x > 0.0) || !std::isfinite(x)) return kNaN;
    log_sum += std::log(x);
  }
  return std::exp(log_sum / static_cast<double>(sample.size()));
}

}  // namespace attnbench
