#include "train/task_training.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "core/onednn_context.hpp"
#include "train/parameters.hpp"
#include "train/tasks.hpp"
#include "train/trainer.hpp"

namespace attnbench {

namespace {

constexpr std::uint64_t kTrainStream = 1, kHeldOutStream = 2, kLongStream = 3;

// Loads a batch into the model a Backprop reads (tokens, lengths) and returns its targets.
void load(Model& model, const Batch& batch) {
  model.src_tokens = batch.src_tokens;
  model.lengths = batch.lengths;
  model.tgt_tokens = batch.dec_input;
}

// Teacher-forced quality of `model` (its Backprop `bp`) on `examples`.
Quality evaluate(Model& model, Backprop& bp, const std::vector<Example>& examples, AttentionMap* first) {
  const Problem& p = model.problem;
  QualitySums sums;
  for (std::size_t first_row = 0; first_row < examples.size(); first_row += static_cast<std::size_t>(p.batch)) {
    const Batch batch = make_batch(examples, first_row, p.batch, p.src_len, p.tgt_len);
    load(model, batch);
    bp.forward(batch.targets);
    sums.add(batch, bp.logits(), bp.alphas(), p.vocab);
    if (first != nullptr && first_row == 0) {
      const Example& e = examples.front();
      first->source = e.source;
      first->target = e.target;
      first->weights.clear();
      for (std::size_t t = 0; t <= e.target.size(); ++t)
        for (std::size_t j = 0; j < e.source.size(); ++j)
          first->weights.push_back(bp.alphas()[t * static_cast<std::size_t>(p.batch * p.src_len) + j]);
    }
  }
  return sums.means();
}

Quality nan_quality() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {nan, nan, nan, nan, nan, nan, nan};
}

// The trained parameters on a model for sources up to long_len, and its quality on `examples`.
Quality evaluate_long(const TrainSetup& setup, ScorerFactory make_scorer, Model& trained, OneDnnContext& ctx,
                      const std::vector<Example>& examples) {
  Problem p = trained.problem;
  p.src_len = setup.long_len;
  p.tgt_len = max_target_len(find_task(setup.task), setup.long_len) + 1;
  Model model = make_model(p, make_scorer);
  const std::vector<NamedTensor> from = named_parameters(trained), to = named_parameters(model);
  for (std::size_t i = 0; i < from.size(); ++i) std::copy(from[i].data.begin(), from[i].data.end(), to[i].data.begin());
  Backprop bp(ctx, model);
  return evaluate(model, bp, examples, nullptr);
}

}  // namespace

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  TaskRng mix(seed ^ (stream << 56) ^ (index * 0x9e3779b97f4a7c15ULL));
  return mix.next();
}

Problem task_problem(const TrainSetup& setup) {
  Problem p = setup.problem;
  p.vocab = kTaskVocab;
  p.tgt_len = max_target_len(find_task(setup.task), p.src_len) + 1;
  p.init = InitKind::torch;
  p.impl = Impl::onednn;
  p.dtype = DType::f32;
  return p;
}

TrainOutcome train_on_task(const TrainSetup& setup, ScorerFactory make_scorer, const std::function<bool()>& stop) {
  const TaskInfo& task = find_task(setup.task);
  const Problem p = task_problem(setup);
  const std::uint64_t seed = p.seed;
  OneDnnContext ctx(p.threads);
  Model model = make_model(p, make_scorer);
  const std::vector<Example> held_out =
      draw_examples(task, setup.eval_size, p.effective_len_min(), p.src_len, stream_seed(seed, kHeldOutStream, 0));
  Trainer trainer(ctx, model, std::vector<std::int64_t>(static_cast<std::size_t>(p.batch * p.tgt_len)),
                  TrainOptions{setup.lr, setup.clip});

  TrainOutcome out;
  double loss_since_eval = 0;
  std::int64_t steps_since_eval = 0;
  using Clock = std::chrono::steady_clock;
  for (std::int64_t step = 1; step <= setup.steps; ++step) {
    if (stop()) {
      out.status = "interrupted";
      return out;
    }
    const Batch batch = make_batch(draw_examples(task, p.batch, p.effective_len_min(), p.src_len,
                                                 stream_seed(seed, kTrainStream, static_cast<std::uint64_t>(step))),
                                   0, p.batch, p.src_len, p.tgt_len);
    const auto start = Clock::now();
    load(model, batch);
    trainer.set_gold(batch.targets);
    const double loss = trainer.forward_backward();
    if (!std::isfinite(loss)) {
      out.status = "diverged at step " + std::to_string(step);
      out.final_eval = out.long_eval = nan_quality();
      return out;
    }
    trainer.update();
    out.train_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    out.steps = step;
    for (std::int64_t t : batch.targets) out.train_tokens += t != kIgnoreTarget;
    loss_since_eval += loss;
    ++steps_since_eval;
    if (step % setup.eval_every == 0 || step == setup.steps) {
      out.curve.push_back({step, out.train_seconds, loss_since_eval / static_cast<double>(steps_since_eval),
                           evaluate(model, trainer.backprop(), held_out, &out.example)});
      loss_since_eval = 0;
      steps_since_eval = 0;
    }
  }
  out.final_eval = out.curve.back().eval;
  out.long_eval = nan_quality();
  if (setup.long_len > p.src_len) {
    const std::vector<Example> long_set = draw_examples(task, setup.eval_size, p.src_len + 1, setup.long_len,
                                                        stream_seed(seed, kLongStream, 0));
    out.long_eval = evaluate_long(setup, make_scorer, model, ctx, long_set);
  }
  return out;
}

}  // namespace attnbench
