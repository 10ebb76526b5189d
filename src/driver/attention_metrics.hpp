// The attention-shape numbers of entropy.csv, measured on a decode trace.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/trace.hpp"

namespace attnbench {

// Shape of the attention weights over all decode steps x examples ("rows"), one member
// per line of driver/metrics.def (which defines each). Every per-row quantity uses only
// the valid positions j < lengths[b]; logs are natural. With samples == 0 (no decode
// steps) every mean, min and max is NaN. entropy_diff_f32 is set by the driver for bf16
// rows (0 for f32 rows).
struct AttentionMetrics {
#define ATTNBENCH_METRIC(column, cpp_type, unit, definition) cpp_type column = 0;
#include "driver/metrics.def"
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

// Returns the value cells of an entropy.csv row, one per line of driver/metrics.def in
// its order; integers as integers, the rest with "%.9g".
std::vector<std::string> metric_cells(const AttentionMetrics& m);

}  // namespace attnbench
