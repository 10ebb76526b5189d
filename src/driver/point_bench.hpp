// Times every stage of every scorer at one grid point with Google Benchmark.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "driver/attention_metrics.hpp"
#include "driver/grid.hpp"
#include "driver/schema.hpp"

namespace attnbench {

// The stages timed when --stages is not given, in schema order: every stage but the
// opt-in ones ({"keys", "score", ..., "decode"}; train_step only on request).
inline std::vector<std::string> default_stages() {
  std::vector<std::string> stages;
  for (std::string_view stage : schema::kStages)
    if (std::find(schema::kOptInStages.begin(), schema::kOptInStages.end(), stage) == schema::kOptInStages.end())
      stages.emplace_back(stage);
  return stages;
}

struct BenchSettings {
  int repetitions = 5;
  double min_time = 0.05;                              // seconds per repetition
  std::vector<std::string> stages = default_stages();  // the stages to time (--stages), in schema order
};

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
