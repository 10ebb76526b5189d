// The small-shape path: at the lesson's sizes a fused step allocates nothing (no heap
// call from our code, oneDNN or libgomp) and so creates no primitive.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "allocation_counter.hpp"
#include "test_support.hpp"
#include "core/harness.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::allocations_since_reset;
using test::reset_allocation_count;

// The lesson's sizes, with padding (lengths 10 and 4) so the mask is exercised.
Problem lesson_point(const std::string& scorer, int threads) {
  Problem p;
  p.scorer = scorer;
  p.batch = 2;
  p.src_len = 10;
  p.enc_dim = 16;
  p.dec_dim = 20;
  p.attn_dim = 32;
  p.len_min = 4;
  p.threads = threads;
  p.impl = Impl::fused;
  return p;
}

class FusedStepAllocations : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(FusedStepAllocations, NoneAtTheLessonsSizes) {
  if (!test::allocation_counting_available()) GTEST_SKIP() << "malloc belongs to the sanitizer in this build";
  const auto& [scorer, threads] = GetParam();
  const Problem p = lesson_point(scorer, threads);
  Model model = make_model(p, find_scorer(p.scorer).make);
  OneDnnContext ctx(p.threads, p.dtype);
  Harness harness(ctx, model);
  harness.run_traced();  // warm-up: OpenMP's threads and buffers exist from here on
  // The counter sees every thread: nothing else may run while it counts.
  reset_allocation_count();
  for (int i = 0; i < 20; ++i) {
    harness.score();
    harness.attend();
    harness.score_and_attend();
  }
  EXPECT_EQ(allocations_since_reset(), 0);
  // The counter does count: one malloc through a pointer the compiler cannot see through.
  void* (*volatile allocate)(std::size_t) = std::malloc;
  reset_allocation_count();
  void* block = allocate(1000);
  EXPECT_EQ(allocations_since_reset(), 1);
  std::free(block);
  // operator new (src/core/aligned_new.cpp: aligned_alloc from 64 bytes, malloc below) too.
  for (std::size_t bytes : {8u, 1000u}) {
    reset_allocation_count();
    void* object = ::operator new(bytes);
    EXPECT_EQ(allocations_since_reset(), 1) << bytes << " bytes";
    ::operator delete(object);
  }
  EXPECT_GT(harness.weights()[0], 0.f);
}

INSTANTIATE_TEST_SUITE_P(EveryScorerOneAndTwoThreads, FusedStepAllocations,
                         ::testing::Combine(::testing::ValuesIn(test::all_scorer_names()), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "t";
                         });

}  // namespace
}  // namespace attnbench
