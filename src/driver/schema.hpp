// Column lists of the output files (shared/spec/csv-schema.md) and the stage list, as
// arrays: read from driver/columns.def, driver/metrics.def and driver/stages.def.
#pragma once

#include <array>
#include <string_view>

namespace attnbench::schema {

// Columns that identify a timing measurement; --resume and compare match on them.
inline constexpr auto kTimingKey = std::to_array<std::string_view>({
#define ATTNBENCH_TIMING_KEY(column) #column,
#include "driver/columns.def"
});

inline constexpr auto kTimingValues = std::to_array<std::string_view>({
#define ATTNBENCH_TIMING_VALUE(column, unit, definition) #column,
#include "driver/columns.def"
});

inline constexpr auto kSampleValues = std::to_array<std::string_view>({
#define ATTNBENCH_SAMPLE_VALUE(column, unit, definition) #column,
#include "driver/columns.def"
});

inline constexpr auto kEntropyKey = std::to_array<std::string_view>({
#define ATTNBENCH_ENTROPY_KEY(column) #column,
#include "driver/columns.def"
});

inline constexpr auto kEntropyValues = std::to_array<std::string_view>({
#define ATTNBENCH_METRIC(column, cpp_type, unit, definition) #column,
#include "driver/metrics.def"
});

// Timed stages, in the order a point reports them.
inline constexpr auto kStages = std::to_array<std::string_view>({
#define ATTNBENCH_STAGE(name, per, timing, description) #name,
#include "driver/stages.def"
});

// Whether `stage` is timed once per sequence (its ns_per_step divides by tgt_len).
constexpr bool is_sequence_stage(std::string_view stage) {
#define ATTNBENCH_STAGE(name, per, timing, description) \
  if (stage == #name) return std::string_view(#per) == "sequence";
#include "driver/stages.def"
  return false;
}

// Whether `stage` is timed when --stages is not given (train_step is opt-in).
constexpr bool is_default_stage(std::string_view stage) {
#define ATTNBENCH_STAGE(name, per, timing, description) \
  if (stage == #name) return std::string_view(#timing) == "by_default";
#include "driver/stages.def"
  return false;
}

}  // namespace attnbench::schema
