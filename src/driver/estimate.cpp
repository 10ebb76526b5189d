#include "driver/estimate.hpp"

#include <algorithm>

#include "driver/cost_model.hpp"
#include "driver/schema.hpp"

namespace attnbench {

namespace {
constexpr double kFlopsPerThread = 20e9;
constexpr double kCallOverhead = 2e-6;
// Google Benchmark runs a few growing iteration counts before each repetition settles.
constexpr double kRepetitionOverhead = 1.5;

double stage_seconds(const Problem& p, std::string_view stage) {
  const double T = static_cast<double>(p.tgt_len);
  const double calls = stage == "decode" ? 4.0 * T : stage == "train_step" ? 12.0 * T : 2.0;
  return stage_cost(p, stage).flops / (kFlopsPerThread * p.threads) + calls * kCallOverhead;
}
}  // namespace

std::uint64_t point_memory_bytes(const GridPoint& point) {
  std::uint64_t total = 0;
  for (const std::string& scorer : point.scorers) {
    Problem p = point.problem;
    p.scorer = scorer;
    total += estimated_bytes(p);
  }
  return total;
}

double point_seconds(const GridPoint& point, const BenchSettings& settings) {
  double seconds = 0;
  for (const std::string& scorer : point.scorers) {
    Problem p = point.problem;
    p.scorer = scorer;
    // Parameter init touches every weight once (~10 ns per value under --init torch).
    seconds += static_cast<double>(estimated_bytes(p)) / 4.0 * (p.init == InitKind::torch ? 10e-9 : 1e-9);
    seconds += stage_seconds(p, "encoder") + stage_seconds(p, "decode");  // the traced decode
    for (const std::string& stage : settings.stages)
      seconds += settings.repetitions * kRepetitionOverhead * std::max(settings.min_time, stage_seconds(p, stage));
  }
  return seconds;
}

double stage_call_seconds(const Problem& p, std::string_view stage) { return stage_seconds(p, stage); }

}  // namespace attnbench
