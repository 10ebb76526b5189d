// A context pins the OpenMP thread count that oneDNN's kernels run with.
#include <gtest/gtest.h>
#include <omp.h>

#include "core/harness.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

// Threads in a parallel region opened on the calling thread, as oneDNN's OpenMP runtime opens them.
int threads_in_parallel_region() {
  int seen = 0;
#pragma omp parallel
  {
#pragma omp single
    seen = omp_get_num_threads();
  }
  return seen;
}

class ThreadCount : public ::testing::TestWithParam<int> {};

TEST_P(ThreadCount, ContextSetsTheCountBeforePrimitivesAreCreated) {
  const int threads = GetParam();
  omp_set_num_threads(threads == 1 ? 2 : 1);  // start from the other count
  OneDnnContext ctx(threads);
  EXPECT_EQ(omp_get_max_threads(), threads);
  Problem p;
  p.scorer = "additive";
  p.threads = threads;
  Model model = make_model(p, find_scorer(p.scorer).make);
  Harness harness(ctx, model);
  harness.run_traced();
  EXPECT_EQ(threads_in_parallel_region(), threads);
}

INSTANTIATE_TEST_SUITE_P(OneAndTwo, ThreadCount, ::testing::Values(1, 2));

}  // namespace
}  // namespace attnbench
