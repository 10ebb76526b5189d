// Quality metrics against hand-computed values, and short trainings on the tasks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "train/cross_entropy.hpp"
#include "train/quality.hpp"
#include "train/task_training.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

// Two examples and one filler row (not counted), L 2, T 2, vocab 3 (2 plays EOS).
TEST(Quality, HandComputed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto n = static_cast<float>(nan);
  Batch b;
  b.batch = 3;
  b.src_len = 2;
  b.tgt_len = 2;
  b.examples = 2;
  b.lengths = {2, 1, 2};
  b.targets = {1, 2, 0, 2, kIgnoreTarget, kIgnoreTarget};
  b.gold_pos = {1, -1, 0, -1, -1, -1};
  const float l2 = std::log(2.f), l3 = std::log(3.f);
  // logits (T, B, V)
  const std::vector<float> logits = {
      0, l2, 0,  5, 0, 0,  n, n, n,   // t = 0: row 0 p = (1/4, 1/2, 1/4) right; row 1 right
      l3, 0, 0,  0, 0, 5,  n, n, n};  // t = 1: row 0 p = (3/5, 1/5, 1/5) wrong; row 1 right
  // alphas (T, B, L)
  const std::vector<float> alphas = {0.75f, 0.25f, 1, 0, n, n,   // t = 0: row 0's argmax 0, gold 1
                                     0.5f, 0.5f, 1, 0, n, n};
  QualitySums sums;
  sums.add(b, logits, alphas, 3);
  const Quality q = sums.means();
  const double easy = std::log(1 + 2 * std::exp(-5.0));
  EXPECT_NEAR(q.loss, (std::log(2.0) + std::log(5.0) + 2 * easy) / 4, 1e-6);
  EXPECT_DOUBLE_EQ(q.token_acc, 0.75);
  EXPECT_DOUBLE_EQ(q.seq_acc, 0.5);
  EXPECT_DOUBLE_EQ(q.align_acc, 0.5);
  EXPECT_NEAR(q.gold_mass, (0.25 + 1.0) / 2, 1e-7);
  const double h0 = -(0.75 * std::log(0.75) + 0.25 * std::log(0.25)) / std::log(2.0);
  EXPECT_NEAR(q.entropy_norm, (h0 + 1.0) / 2, 1e-6);  // row 1 (length 1) has no entropy_norm
  EXPECT_NEAR(q.drift, (0.25 + 0.0) / 2, 1e-7);       // row 0: 0.5 (|0.5-0.75| + |0.5-0.25|)
}

TEST(Quality, EmptyIsNaN) {
  EXPECT_TRUE(std::isnan(QualitySums().means().token_acc));
}

TrainSetup tiny_reverse() {
  TrainSetup s;
  s.task = "reverse";
  s.problem.scorer = "additive";
  s.problem.batch = 64;
  s.problem.len_min = 5;
  s.problem.src_len = 8;
  s.problem.emb_dim = 32;
  s.problem.enc_dim = 64;
  s.problem.dec_dim = 64;
  s.problem.attn_dim = 64;
  s.problem.seed = 1;
  s.steps = 200;
  s.eval_every = 10;
  s.eval_size = 64;
  s.long_len = 10;
  return s;
}

TEST(TaskTraining, ProblemComesFromTheTask) {
  TrainSetup s = tiny_reverse();
  EXPECT_EQ(task_problem(s).tgt_len, 9);
  EXPECT_EQ(task_problem(s).vocab, 23);
  s.task = "recall";
  EXPECT_EQ(task_problem(s).tgt_len, 2);
}

// Teacher-forced reverse, lengths 5-8: the loss falls by at least half within 200 steps.
TEST(TaskTraining, ReverseLossHalvesWithin200Steps) {
  const TrainOutcome out = train_on_task(tiny_reverse(), find_scorer("additive").make);
  ASSERT_EQ(out.status, "ok");
  ASSERT_EQ(out.curve.size(), 20u);
  EXPECT_EQ(out.steps, 200);
  EXPECT_EQ(out.curve.back().step, 200);
  EXPECT_GT(out.curve.front().train_loss, 2.5);  // about ln 23 = 3.1 at the start
  EXPECT_LE(out.curve.back().train_loss, 0.5 * out.curve.front().train_loss);
  EXPECT_LE(out.curve.back().eval.loss, 0.5 * out.curve.front().eval.loss);
  EXPECT_GT(out.train_tokens, 200 * 64 * 6);  // 64 sources of 5-8 symbols + EOS per step
  EXPECT_GT(out.train_seconds, 0);
  EXPECT_TRUE(std::isfinite(out.long_eval.token_acc));  // lengths 9-10
  ASSERT_EQ(out.example.weights.size(), (out.example.target.size() + 1) * out.example.source.size());
}

TEST(TaskTraining, HugeStepsDiverge) {
  TrainSetup s = tiny_reverse();
  s.lr = 1e30;
  s.clip = 1e30;
  const TrainOutcome out = train_on_task(s, find_scorer("dot").make);
  EXPECT_EQ(out.status.rfind("diverged at step ", 0), 0u) << out.status;
  EXPECT_LT(out.steps, 200);
  EXPECT_EQ(out.status, "diverged at step " + std::to_string(out.steps + 1));
  EXPECT_TRUE(std::isnan(out.final_eval.token_acc));
}

TEST(TaskTraining, StopEndsInterrupted) {
  int asked = 0;
  const TrainOutcome out = train_on_task(tiny_reverse(), find_scorer("dot").make, [&] { return ++asked == 3; });
  EXPECT_EQ(out.status, "interrupted");
  EXPECT_EQ(out.steps, 2);
}

}  // namespace
}  // namespace attnbench
