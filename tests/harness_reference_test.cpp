// The whole oneDNN decode (Harness::run_traced) against the double reference
// (ref::decode) for every scorer, step by step and tensor by tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/harness.hpp"
#include "core/model.hpp"
#include "core/onednn_context.hpp"
#include "core/reference.hpp"
#include "impl_support.hpp"
#include "test_support.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::count;
using test::Case;
using test::all_scorer_names;
using test::kShapes;
using test::near_reference;

// Both traces of one point: the oneDNN harness's and the reference's.
struct Traces {
  Model model;
  DecodeTrace ours, ref;
};

Traces decode_both(const Problem& p) {
  Traces t{make_model(p, find_scorer(p.scorer).make), {}, {}};
  OneDnnContext ctx(p.threads, p.dtype);
  Harness harness(ctx, t.model);
  t.ours = harness.run_traced();
  t.ref = ref::decode(t.model);
  return t;
}

// Total variation distance between two weight rows of length n.
double total_variation(const double* a, const double* b, std::int64_t n) {
  double tv = 0.0;
  for (std::int64_t j = 0; j < n; ++j) tv += std::abs(a[j] - b[j]);
  return tv / 2;
}

// --- every scorer, every tensor, every step ---------------------------------------------

using HarnessParam = std::tuple<std::string, Case>;

class HarnessReference : public ::testing::TestWithParam<HarnessParam> {
 protected:
  Problem problem() const {
    Problem p = std::get<1>(GetParam()).problem;
    p.scorer = std::get<0>(GetParam());
    return p;
  }
};

std::string harness_param_name(const ::testing::TestParamInfo<HarnessParam>& info) {
  const Case& c = std::get<1>(info.param);
  return std::get<0>(info.param) + "_" + c.name + "_" + test::run_name(c.problem);
}

TEST_P(HarnessReference, EveryStepMatchesReference) {
  const Problem p = problem();
  const Traces t = decode_both(p);
  const test::Tolerance tol = test::tolerance_for(p.dtype);
  // The encoder GRU stays f32 under bf16: its annotations keep the f32 tolerance.
  EXPECT_TRUE(near_reference("annotations", t.ours.annotations, t.ref.annotations));
  EXPECT_TRUE(near_reference("initial_state", t.ours.initial_state, t.ref.initial_state, tol));
  ASSERT_EQ(t.ours.steps.size(), count(p.tgt_len));
  ASSERT_EQ(t.ref.steps.size(), count(p.tgt_len));
  for (std::size_t s = 0; s < t.ref.steps.size(); ++s) {
    const StepRecord &ours = t.ours.steps[s], &ref = t.ref.steps[s];
    SCOPED_TRACE("step " + std::to_string(s));
    EXPECT_TRUE(near_reference("scores", ours.scores, ref.scores, tol));
    EXPECT_TRUE(near_reference("weights", ours.weights, ref.weights, tol));
    EXPECT_TRUE(near_reference("context", ours.context, ref.context, tol));
    EXPECT_TRUE(near_reference("state", ours.state, ref.state, tol));
    EXPECT_TRUE(near_reference("logits", ours.logits, ref.logits, tol));
  }
}

INSTANTIATE_TEST_SUITE_P(AllScorers, HarnessReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::make_cases(kShapes))),
                         harness_param_name);

// The same points with --dtype bf16, against the same double reference (test::kBf16Tolerance).
INSTANTIATE_TEST_SUITE_P(Bf16, HarnessReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_dtype(test::make_cases(kShapes),
                                                                                 DType::bf16))),
                         harness_param_name);

// The fused decode with --dtype bf16 (keys and annotations stored as bf16).
INSTANTIATE_TEST_SUITE_P(FusedBf16, HarnessReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_impl(
                                                test::with_dtype(test::make_cases(kShapes), DType::bf16),
                                                Impl::fused))),
                         harness_param_name);

// The same points computed by the fused kernels (Impl::fused).
INSTANTIATE_TEST_SUITE_P(Fused, HarnessReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_impl(test::make_cases(kShapes),
                                                                                Impl::fused))),
                         harness_param_name);

// The same points, restricted to those with padding.
class HarnessPadding : public HarnessReference {};

TEST_P(HarnessPadding, PaddedPositionsGetMinusInfAndExactlyZeroWeight) {
  const Problem p = problem();
  const Traces t = decode_both(p);
  const std::vector<std::int64_t> lengths = source_lengths(p);
  for (std::size_t s = 0; s < t.ours.steps.size(); ++s)
    for (std::int64_t b = 0; b < p.batch; ++b) {
      for (std::int64_t j = lengths[count(b)]; j < p.src_len; ++j) {
        const std::size_t i = count(b * p.src_len + j);
        EXPECT_EQ(t.ours.steps[s].scores[i], -std::numeric_limits<double>::infinity()) << "step " << s << " b " << b;
        EXPECT_EQ(t.ours.steps[s].weights[i], 0.0) << "step " << s << " b " << b << " j " << j;
      }
      double sum = 0.0;
      for (std::int64_t j = 0; j < p.src_len; ++j) sum += t.ours.steps[s].weights[count(b * p.src_len + j)];
      EXPECT_NEAR(sum, 1.0, 1e-5) << "step " << s << " b " << b;
    }
}

INSTANTIATE_TEST_SUITE_P(AllScorers, HarnessPadding,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::padded_cases(kShapes))),
                         harness_param_name);

INSTANTIATE_TEST_SUITE_P(Bf16, HarnessPadding,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_dtype(test::padded_cases(kShapes),
                                                                                 DType::bf16))),
                         harness_param_name);

INSTANTIATE_TEST_SUITE_P(Fused, HarnessPadding,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_impl(test::padded_cases(kShapes),
                                                                                Impl::fused))),
                         harness_param_name);

TEST(HarnessReference, CasesCoverTheEdges) {
  // The shape list must keep the points this suite promises to cover.
  bool batch1 = false, len1 = false, size17 = false, size33 = false, padded = false, two_threads = false, torch = false,
       fast = false;
  for (const Case& c : test::make_cases(kShapes)) {
    const Problem& p = c.problem;
    EXPECT_EQ(p.enc_dim % 2, 0) << c.name;
    EXPECT_NO_THROW(validate(p)) << c.name;
    batch1 |= p.batch == 1;
    len1 |= p.src_len == 1;
    size17 |= p.src_len == 17 || p.dec_dim == 17 || p.attn_dim == 17 || p.enc_dim == 34;
    size33 |= p.src_len == 33 || p.dec_dim == 33 || p.attn_dim == 33;
    padded |= p.len_min != 0 && p.len_min < p.src_len && p.batch > 1;
    two_threads |= p.threads == 2;
    torch |= p.init == InitKind::torch;
    fast |= p.init == InitKind::fast;
  }
  EXPECT_TRUE(batch1 && len1 && size17 && size33 && padded && two_threads && torch && fast);
}

// --- additive_linear: the alignment cannot change from step to step ----------------------

using test::multi_step_point;

class StaticAlignment : public ::testing::TestWithParam<std::tuple<InitKind, Impl>> {};

TEST_P(StaticAlignment, AdditiveLinearWeightsAreTheSameAtEveryStep) {
  const Problem p = multi_step_point("additive_linear", std::get<0>(GetParam()), std::get<1>(GetParam()));
  const Traces t = decode_both(p);
  ASSERT_EQ(t.ours.steps.size(), count(p.tgt_len));
  ASSERT_EQ(t.ref.steps.size(), count(p.tgt_len));
  for (std::size_t s = 1; s < t.ref.steps.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    // Both impls: the weights come from the step-independent alignment logits, so they
    // are bit-identical at every step (drift exactly 0), and match the reference.
    EXPECT_EQ(t.ours.steps[s].weights, t.ours.steps[0].weights);
    EXPECT_TRUE(near_reference("weights vs reference step 0", t.ours.steps[s].weights, t.ref.steps[0].weights));
    // Reference: v.W s is constant over j and cancels in the softmax, but the double
    // sums v.(U h_j + W s) round differently at each step: drift ~1e-17, not 0.
    for (std::int64_t b = 0; b < p.batch; ++b)
      EXPECT_LE(total_variation(t.ref.steps[s].weights.data() + b * p.src_len,
                                t.ref.steps[0].weights.data() + b * p.src_len, p.src_len),
                1e-14)
          << "b " << b;
  }
}

TEST_P(StaticAlignment, AdditiveWithTanhDoesMoveItsWeights) {
  // The contrast: with tanh the alignment does depend on s_{t-1}, so the check above
  // is not vacuous.
  const Problem p = multi_step_point("additive", std::get<0>(GetParam()), std::get<1>(GetParam()));
  const Traces t = decode_both(p);
  // With tanh the alignment depends on s_{t-1}: the drift is far above rounding.
  double largest = 0.0;
  for (std::size_t s = 1; s < t.ours.steps.size(); ++s)
    for (std::int64_t b = 0; b < p.batch; ++b)
      largest = std::max(largest, total_variation(t.ours.steps[s].weights.data() + b * p.src_len,
                                                  t.ours.steps[s - 1].weights.data() + b * p.src_len, p.src_len));
  EXPECT_GT(largest, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(BothInitsBothImpls, StaticAlignment,
                         ::testing::Combine(::testing::Values(InitKind::fast, InitKind::torch),
                                            ::testing::ValuesIn(test::all_impls())),
                         [](const auto& info) {
                           return to_string(std::get<0>(info.param)) + "_" + to_string(std::get<1>(info.param));
                         });

// --- threads do not change the numbers ---------------------------------------------------

TEST(HarnessReference, OneAndTwoThreadsAgreeWithinTolerance) {
  for (Impl impl : test::all_impls()) {
    SCOPED_TRACE(to_string(impl));
    Problem p = multi_step_point("general", InitKind::torch, impl);
    p.threads = 1;
    const Traces one = decode_both(p);
    p.threads = 2;
    const Traces two = decode_both(p);
    const StepRecord &a = one.ours.steps.back(), &b = two.ours.steps.back();
    EXPECT_TRUE(near_reference("logits (2 threads vs 1)", b.logits, a.logits));
    EXPECT_TRUE(near_reference("weights (2 threads vs 1)", b.weights, a.weights));
  }
}

}  // namespace
}  // namespace attnbench
