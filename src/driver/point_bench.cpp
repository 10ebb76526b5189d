#include "driver/point_bench.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>

#include "core/harness.hpp"
#include "driver/schema.hpp"
#include "train/trainer.hpp"
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

struct ScorerRig {
  Model model;
  std::unique_ptr<Harness> harness;
  Model training_model;  // a copy the train_step stage trains (Adam changes it in place)
  std::unique_ptr<Trainer> trainer;
};

// The work of each stage of driver/stages.def on a ready rig (harness encoded, keys
// prepared; trainer built when train_step is timed), named work_<stage>.
void work_keys(ScorerRig& r) { r.harness->prepare_keys(); }
void work_score(ScorerRig& r) { r.harness->score(); }
void work_attend(ScorerRig& r) { r.harness->attend(); }
void work_step(ScorerRig& r) { r.harness->score_and_attend(); }
void work_cell(ScorerRig& r) { r.harness->cell(0); }
void work_output(ScorerRig& r) { r.harness->output(); }
void work_encoder(ScorerRig& r) { r.harness->encode(); }
void work_decode(ScorerRig& r) { r.harness->decode(); }
void work_train_step(ScorerRig& r) { r.trainer->step(); }  // forward, loss, backward, clip, Adam

std::function<void()> stage_work(ScorerRig& rig, std::string_view stage) {
#define ATTNBENCH_STAGE(name, per, timing, description) \
  if (stage == #name) return [&rig] { work_##name(rig); };
#include "driver/stages.def"
  throw std::invalid_argument("unknown stage '" + std::string(stage) + "'");
}

// The train_step stage's trainer for p: the model, src and tgt as `probe --steps T` draws
// them, then gold = randint(0, vocab, (B, T)), as `attnbench grad` and the PyTorch peer.
std::unique_ptr<Trainer> make_trainer(OneDnnContext& ctx, const Problem& p, Model& model) {
  ParamSource source(p.init, p.seed);
  model = make_model(source, p, find_scorer(p.scorer).make);
  std::vector<std::int64_t> gold(static_cast<std::size_t>(p.batch * p.tgt_len));
  source.randint(gold, 0, p.vocab);
  auto trainer = std::make_unique<Trainer>(ctx, model, std::move(gold), TrainOptions{});
  trainer->step();  // warm-up, like the traced decode of the other stages
  return trainer;
}

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
    if (std::find(settings.stages.begin(), settings.stages.end(), "train_step") != settings.stages.end())
      rigs[i].trainer = make_trainer(ctx, p, rigs[i].training_model);
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
                                   [work = stage_work(rigs[i], stage)](benchmark::State& state) {
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
