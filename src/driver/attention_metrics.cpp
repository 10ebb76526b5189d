#include "driver/attention_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/attention_stats.hpp"

namespace attnbench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Running mean of a stream of doubles.
struct Mean {
  double sum = 0.0;
  std::int64_t count = 0;
  void add(double x) {
    sum += x;
    ++count;
  }
  double value() const { return count ? sum / static_cast<double>(count) : kNaN; }
};

// ||diag(a) - a a^T||_F of the softmax Jacobian at weights a.
double jacobian_frobenius(std::span<const double> a) {
  double s2 = 0.0, s3 = 0.0;
  for (double w : a) {
    s2 += w * w;
    s3 += w * w * w;
  }
  return std::sqrt(std::max(0.0, s2 - 2.0 * s3 + s2 * s2));  // rounding can dip below 0
}

// Population standard deviation.
double population_std(std::span<const double> x) {
  double mean = 0.0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double squares = 0.0;
  for (double v : x) squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(x.size()));
}

// Total variation distance 0.5 * sum |a - b|.
double total_variation(std::span<const double> a, std::span<const double> b) {
  double sum = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) sum += std::abs(a[j] - b[j]);
  return 0.5 * sum;
}

std::string metric_cell(double x) { return fmt::format("{:.9g}", x); }
std::string metric_cell(std::int64_t n) { return std::to_string(n); }

void check_shapes(const DecodeTrace& trace, std::span<const std::int64_t> lengths, std::int64_t batch,
                  std::int64_t src_len) {
  if (batch < 1 || src_len < 1)
    throw std::invalid_argument("measure_attention: batch and src_len must be >= 1, got " + std::to_string(batch) +
                                " and " + std::to_string(src_len));
  if (static_cast<std::int64_t>(lengths.size()) != batch)
    throw std::invalid_argument("measure_attention: " + std::to_string(lengths.size()) + " lengths for batch " +
                                std::to_string(batch));
  for (std::int64_t len : lengths)
    if (len < 1 || len > src_len)
      throw std::invalid_argument("measure_attention: length " + std::to_string(len) + " outside 1.." +
                                  std::to_string(src_len));
  const auto size = static_cast<std::size_t>(batch * src_len);
  for (std::size_t t = 0; t < trace.steps.size(); ++t)
    if (trace.steps[t].scores.size() != size || trace.steps[t].weights.size() != size)
      throw std::invalid_argument("measure_attention: step " + std::to_string(t) + " has " +
                                  std::to_string(trace.steps[t].scores.size()) + " scores and " +
                                  std::to_string(trace.steps[t].weights.size()) + " weights, expected " +
                                  std::to_string(size) + " (batch x src_len)");
}

}  // namespace

AttentionMetrics measure_attention(const DecodeTrace& trace, std::span<const std::int64_t> lengths,
                                   std::int64_t batch, std::int64_t src_len) {
  check_shapes(trace, lengths, batch, src_len);
  std::vector<double> entropies;  // one per row
  Mean entropy_norm, max_w, support, drift, jacobian, score_std;
  double leak_max = 0.0;

  const auto L = static_cast<std::size_t>(src_len);
  for (std::size_t t = 0; t < trace.steps.size(); ++t) {
    const StepRecord& step = trace.steps[t];
    for (std::size_t b = 0; b < static_cast<std::size_t>(batch); ++b) {
      const auto len = static_cast<std::size_t>(lengths[b]);
      const std::span<const double> row(step.weights.data() + b * L, L);
      const std::span<const double> weights = row.first(len);
      const std::span<const double> scores(step.scores.data() + b * L, len);

      const double h = entropy(weights);
      entropies.push_back(h);
      if (len >= 2) entropy_norm.add(h / std::log(static_cast<double>(len)));
      max_w.add(max_weight(weights));
      support.add(std::exp(h));
      jacobian.add(jacobian_frobenius(weights));
      score_std.add(population_std(scores));

      double leak = 0.0;
      for (double w : row.subspan(len)) leak += w;
      leak_max = std::max(leak_max, leak);

      if (t >= 1) drift.add(total_variation(weights, std::span(trace.steps[t - 1].weights.data() + b * L, len)));
    }
  }

  AttentionMetrics m;
  m.samples = static_cast<std::int64_t>(entropies.size());
  if (entropies.empty()) {
    m.entropy_mean = m.entropy_std = m.entropy_min = m.entropy_max = kNaN;
  } else {
    m.entropy_mean = std::accumulate(entropies.begin(), entropies.end(), 0.0) / static_cast<double>(m.samples);
    m.entropy_std = population_std(entropies);
    const auto [lo, hi] = std::minmax_element(entropies.begin(), entropies.end());
    m.entropy_min = *lo;
    m.entropy_max = *hi;
  }
  m.entropy_norm_mean = entropy_norm.value();
  m.max_weight_mean = max_w.value();
  m.support_mean = support.value();
  m.drift_mean = m.samples == 0 ? kNaN : drift.count == 0 ? 0.0 : drift.value();
  m.jacobian_fro_mean = jacobian.value();
  m.score_std_mean = score_std.value();
  m.mask_leak_max = leak_max;
  return m;
}

double mean_entropy_difference(const DecodeTrace& trace, const DecodeTrace& baseline,
                               std::span<const std::int64_t> lengths, std::int64_t batch, std::int64_t src_len) {
  check_shapes(trace, lengths, batch, src_len);
  check_shapes(baseline, lengths, batch, src_len);
  if (trace.steps.size() != baseline.steps.size())
    throw std::invalid_argument("mean_entropy_difference: " + std::to_string(trace.steps.size()) +
                                " decode steps against a baseline of " + std::to_string(baseline.steps.size()));
  const auto L = static_cast<std::size_t>(src_len);
  Mean difference;
  for (std::size_t t = 0; t < trace.steps.size(); ++t)
    for (std::size_t b = 0; b < static_cast<std::size_t>(batch); ++b) {
      const auto len = static_cast<std::size_t>(lengths[b]);
      difference.add(entropy(std::span(trace.steps[t].weights.data() + b * L, len)) -
                     entropy(std::span(baseline.steps[t].weights.data() + b * L, len)));
    }
  return difference.value();
}

std::vector<std::string> metric_cells(const AttentionMetrics& m) {
  return {
#define ATTNBENCH_METRIC(column, cpp_type, unit, definition) metric_cell(m.column),
#include "driver/metrics.def"
  };
}

}  // namespace attnbench
