// One training of the encoder-decoder on a task: batches, teacher-forced Adam steps, evaluation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "core/problem.hpp"
#include "train/quality.hpp"

namespace attnbench {

// What `attnbench train` trains at one point. problem gives the scorer, batch, len_min,
// src_len (the longest source), emb/enc/dec/attn dims, threads and seed; vocab and tgt_len
// are set from the task (task_problem()).
struct TrainSetup {
  std::string task = "reverse";
  Problem problem;
  std::int64_t steps = 1500;
  std::int64_t eval_every = 100;  // evaluate after every this many steps, and after the last
  std::int64_t eval_size = 1000;  // examples of the held-out set (and of the long set)
  std::int64_t long_len = 30;     // the long set's sources are src_len+1..long_len long (none if <= src_len)
  double lr = 1e-3;
  double clip = 5;
};

// One evaluation: after `step` Adam steps, `seconds` of training (evaluations excluded),
// the mean training loss of the steps since the previous evaluation.
struct CurvePoint {
  std::int64_t step = 0;
  double seconds = 0, train_loss = 0;
  Quality eval;
};

// The attention of the trained model on one held-out example, for heatmaps.
struct AttentionMap {
  std::vector<std::int64_t> source, target;  // target without EOS
  std::vector<float> weights;                // (target.size() + 1, source.size()): one row per output, EOS last
};

struct TrainOutcome {
  std::string status = "ok";  // or "diverged at step N", or "interrupted"
  std::int64_t steps = 0;     // Adam steps taken
  double train_seconds = 0;   // wall time of the steps (evaluations excluded)
  std::int64_t train_tokens = 0;  // target tokens (EOS included) the steps were trained on
  std::vector<CurvePoint> curve;
  Quality final_eval, long_eval;  // long_eval is NaN when there is no long set
  AttentionMap example;           // held-out example 0
};

// The problem a training runs: setup.problem with vocab 23, tgt_len = longest target + 1,
// torch init, f32 oneDNN.
Problem task_problem(const TrainSetup& setup);

// Trains from setup.problem.seed: the model (PyTorch's init), the training batches (a fresh
// stream per step) and the held-out and long sets (streams of their own) all come from it.
// `stop` is asked before every step; when it returns true the training ends "interrupted".
// A loss that is NaN or inf ends it "diverged at step N" (N counted from 1).
TrainOutcome train_on_task(const TrainSetup& setup, ScorerFactory make_scorer,
                           const std::function<bool()>& stop = [] { return false; });

// The seed of stream `stream` (1 training, 2 held-out, 3 long) at `index` for a training seed.
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);

}  // namespace attnbench
