// The attention-shape numbers of entropy.csv, measured on a decode trace.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/trace.hpp"

namespace attnbench {

// Shape of the attention weights over all decode steps x examples ("rows"). Every
// per-row quantity uses only the valid positions j < lengths[b]; logs are natural.
// With samples == 0 (no decode steps) every mean, min and max is NaN.
struct AttentionMetrics {
  std::int64_t samples = 0;         // rows = steps x batch
  double entropy_mean = 0.0;        // H = -sum a log a, 0 log 0 = 0
  double entropy_std = 0.0;         // population std of H over rows
  double entropy_min = 0.0;
  double entropy_max = 0.0;
  double entropy_norm_mean = 0.0;   // mean of H / ln(length) over rows with length >= 2
                                    // (length 1 has ln 1 = 0 and is skipped; NaN if none)
  double max_weight_mean = 0.0;     // mean of max_j a_j
  double support_mean = 0.0;        // mean of exp(H), the effective number of positions
  double drift_mean = 0.0;          // mean of 0.5 sum_j |a_t - a_{t-1}| over steps t >= 2
                                    // of the same example; 0 when there is one step
  double jacobian_fro_mean = 0.0;   // mean of ||diag(a) - a a^T||_F
                                    //   = sqrt(sum a^2 - 2 sum a^3 + (sum a^2)^2)
  double score_std_mean = 0.0;      // mean of the population std of each row's valid scores
  double mask_leak_max = 0.0;       // largest total weight on padded positions j >= lengths[b]
  double entropy_diff_f32 = 0.0;    // mean of H - H(f32 run of the same point) over rows:
                                    // the driver sets it for bf16 rows; 0 for f32 rows
};

// Measures the attention shape of `trace`, whose steps hold scores and weights of shape
// (batch, src_len). lengths[b] in 1..src_len is example b's valid length. Throws
// std::invalid_argument when the sizes do not fit.
// Example: measure_attention(harness.run_traced(), model.lengths, p.batch, p.src_len).
AttentionMetrics measure_attention(const DecodeTrace& trace, std::span<const std::int64_t> lengths,
                                   std::int64_t batch, std::int64_t src_len);

// Mean over decode steps x examples of entropy(trace) - entropy(baseline) on the valid
// positions, where both traces come from the same point (e.g. bf16 and its f32 run);
// NaN with no decode steps. Throws std::invalid_argument when the sizes or the step
// counts do not fit. Example: m.entropy_diff_f32 = mean_entropy_difference(bf16, f32, ...).
double mean_entropy_difference(const DecodeTrace& trace, const DecodeTrace& baseline,
                               std::span<const std::int64_t> lengths, std::int64_t batch, std::int64_t src_len);

// Returns the value cells of an entropy.csv row, in schema::kEntropyValues order;
// samples as an integer, the rest with "%.9g".
std::vector<std::string> metric_cells(const AttentionMetrics& m);

}  // namespace attnbench
