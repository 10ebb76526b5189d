// A training step (forward, loss, backward, clip, Adam) creates nothing after the first:
// every primitive, buffer and workspace exists from the first step on. What remains are
// oneDNN 2.6's own heap calls inside each primitive execution (its argument map and
// execution context: 7 per matmul even through the C API with a user scratchpad), which
// it frees before returning; so a step allocates the same count every time and keeps
// no block.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "allocation_counter.hpp"
#include "test_support.hpp"
#include "train/trainer.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::allocations_since_reset;
using test::reset_allocation_count;

// The task sizes, shortened (B 8, L 12, T 5), with padding.
Problem task_point(const std::string& scorer, int threads) {
  Problem p;
  p.scorer = scorer;
  p.batch = 8;
  p.src_len = 12;
  p.tgt_len = 5;
  p.emb_dim = 32;
  p.enc_dim = 64;
  p.dec_dim = 64;
  p.attn_dim = 64;
  p.vocab = 23;
  p.len_min = 4;
  p.threads = threads;
  return p;
}

class TrainStepAllocations : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(TrainStepAllocations, NoneAfterTheFirstStep) {
  if (!test::allocation_counting_available()) GTEST_SKIP() << "malloc belongs to the sanitizer in this build";
  const auto& [scorer, threads] = GetParam();
  const Problem p = task_point(scorer, threads);
  Model model = make_model(p, find_scorer(p.scorer).make);
  std::vector<std::int64_t> gold(static_cast<std::size_t>(p.batch * p.tgt_len));
  for (std::size_t i = 0; i < gold.size(); ++i) gold[i] = static_cast<std::int64_t>(i % p.vocab);
  OneDnnContext ctx(p.threads, p.dtype);
  Trainer trainer(ctx, model, gold, {});
  const double first = trainer.step();  // warm-up: OpenMP's threads exist from here on
  std::vector<std::int64_t> calls;
  calls.reserve(4);  // before the count starts
  double last = 0.0;
  reset_allocation_count();
  for (int i = 0; i < 4; ++i) {
    const std::int64_t before = allocations_since_reset();
    last = trainer.step();
    calls.push_back(allocations_since_reset() - before);
  }
  EXPECT_EQ(test::live_blocks_since_reset(), 0);  // nothing kept: no buffer made per step
  for (std::int64_t c : calls) EXPECT_EQ(c, calls[0]);  // nothing made lazily
  EXPECT_LT(last, first);                         // the steps did train
}

INSTANTIATE_TEST_SUITE_P(EveryScorerOneAndTwoThreads, TrainStepAllocations,
                         ::testing::Combine(::testing::ValuesIn(test::all_scorer_names()), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "t";
                         });

}  // namespace
}  // namespace attnbench
