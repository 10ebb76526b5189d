// Times every stage of every scorer at one grid point with Google Benchmark.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "driver/attention_metrics.hpp"
#include "driver/grid.hpp"
#include "driver/run_settings.hpp"
#include "driver/schema.hpp"

namespace attnbench {

// Real time of one iteration, averaged over the `iterations` of one repetition.
struct Sample {
  std::int64_t repetition = 0;
  std::int64_t iterations = 0;
  double ns = 0;
};

// What one scorer at one point measured: samples per timed stage (BenchSettings::stages;
// the others are absent), and the attention metrics of one traced decode.
struct ScorerMeasurement {
  std::string scorer;
  std::map<std::string, std::vector<Sample>, std::less<>> samples;
  AttentionMetrics metrics;
};

// Builds one harness per scorer of `point` on a context with the point's thread
// count, traces one decode of each for the metrics, then times every scorer x stage
// with repetitions interleaved in random order, so that drift hits all alike.
std::vector<ScorerMeasurement> measure_point(const GridPoint& point, const BenchSettings& settings);

}  // namespace attnbench
