// Rough plans for --dry-run and the progress line's ETA: memory and time of a point.
#pragma once

#include <string_view>

#include <cstdint>

#include "driver/grid.hpp"
#include "driver/point_bench.hpp"

namespace attnbench {

// Bytes the harnesses of all the point's scorers hold at once.
std::uint64_t point_memory_bytes(const GridPoint& point);

// Seconds the point is expected to take: set-up, one traced decode and every
// scorer x stage x repetition, assuming ~20 GFLOP/s per thread and 2 us per primitive call.
double point_seconds(const GridPoint& point, const BenchSettings& settings);

// Seconds one call of `stage` is expected to take at p (the same model as point_seconds).
double stage_call_seconds(const Problem& p, std::string_view stage);

}  // namespace attnbench
