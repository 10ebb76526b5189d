#include "driver/point_bench.hpp"

#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <stdexcept>

#include "core/harness.hpp"
#include "driver/schema.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

// Turns on Google Benchmark's random interleaving of repetitions, once per process.
void initialize_benchmark_library() {
  static const bool initialized = [] {
    static char program[] = "attnbench";
    static char interleave[] = "--benchmark_enable_random_interleaving=true";
    char* argv[] = {program, interleave, nullptr};
    int argc = 2;
    benchmark::Initialize(&argc, argv);
    return true;
  }();
  (void)initialized;
}

// Collects every repetition's real time per benchmark name; aggregates are ignored
// (the driver computes its own statistics from the raw samples).
class SampleCollector final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      if (run.error_occurred)
        throw std::runtime_error("benchmark " + run.benchmark_name() + " failed: " + run.error_message);
      samples[run.run_name.function_name].push_back(
          {run.repetition_index, static_cast<std::int64_t>(run.iterations), run.GetAdjustedRealTime()});
    }
  }

  std::map<std::string, std::vector<Sample>> samples;
};

// The work of each stage of driver/stages.def on a ready harness (encoded, keys
// prepared), named work_<stage>.
void work_keys(Harness& h) { h.prepare_keys(); }
void work_score(Harness& h) { h.score(); }
void work_attend(Harness& h) { h.attend(); }
void work_step(Harness& h) { h.score_and_attend(); }
void work_cell(Harness& h) { h.cell(0); }
void work_output(Harness& h) { h.output(); }
void work_encoder(Harness& h) { h.encode(); }
void work_decode(Harness& h) { h.decode(); }

std::function<void()> stage_work(Harness& h, std::string_view stage) {
#define ATTNBENCH_STAGE(name, per, description) \
  if (stage == #name) return [&h] { work_##name(h); };
#include "driver/stages.def"
  throw std::invalid_argument("unknown stage '" + std::string(stage) + "'");
}

struct ScorerRig {
  Model model;
  std::unique_ptr<Harness> harness;
};

// The traced decode of p computed in f32 (same seed, init and sizes) on a context and
// model of its own, which are freed before returning.
DecodeTrace f32_trace(Problem p) {
  p.dtype = DType::f32;
  OneDnnContext ctx(p.threads, p.dtype);
  Model model = make_model(p, find_scorer(p.scorer).make);
  Harness harness(ctx, model);
  return harness.run_traced();
}

}  // namespace

std::vector<ScorerMeasurement> measure_point(const GridPoint& point, const BenchSettings& settings) {
  initialize_benchmark_library();
  OneDnnContext ctx(point.problem.threads, point.problem.dtype);
  std::vector<ScorerRig> rigs(point.scorers.size());
  std::vector<ScorerMeasurement> results(point.scorers.size());
  for (std::size_t i = 0; i < point.scorers.size(); ++i) {
    Problem p = point.problem;
    p.scorer = point.scorers[i];
    rigs[i].model = make_model(p, find_scorer(p.scorer).make);
    rigs[i].harness = std::make_unique<Harness>(ctx, rigs[i].model);
    const DecodeTrace trace = rigs[i].harness->run_traced();
    results[i].scorer = p.scorer;
    results[i].metrics = measure_attention(trace, rigs[i].model.lengths, p.batch, p.src_len);
    if (p.dtype != DType::f32)
      results[i].metrics.entropy_diff_f32 =
          mean_entropy_difference(trace, f32_trace(p), rigs[i].model.lengths, p.batch, p.src_len);
  }

  for (std::size_t i = 0; i < rigs.size(); ++i)
    for (const std::string& stage : settings.stages) {
      const std::string name = std::to_string(i) + "/" + stage;
      benchmark::RegisterBenchmark(name.c_str(),
                                   [work = stage_work(*rigs[i].harness, stage)](benchmark::State& state) {
                                     for (auto _ : state) work();
                                   })
          ->UseRealTime()
          ->Unit(benchmark::kNanosecond)
          ->Repetitions(settings.repetitions)
          ->MinTime(settings.min_time);
    }
  SampleCollector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  benchmark::ClearRegisteredBenchmarks();

  for (std::size_t i = 0; i < rigs.size(); ++i)
    for (const std::string& stage : settings.stages)
      results[i].samples[stage] = collector.samples[std::to_string(i) + "/" + stage];
  return results;
}

}  // namespace attnbench
