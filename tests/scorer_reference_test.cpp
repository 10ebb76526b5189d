// Every scorer's oneDNN path (build, prepare, score) against its reference_score, and
// one attention step (score, masked softmax, context) against ref::masked_softmax/context.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/attention_step.hpp"
#include "core/onednn_context.hpp"
#include "core/param_source.hpp"
#include "core/reference.hpp"
#include "test_support.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::Case;
using test::near_reference;
using test::random_floats;
using test::widen;

constexpr std::size_t kShapes = 24;

std::vector<std::string> all_scorer_names() {
  std::vector<std::string> names;
  for (const ScorerInfo& info : scorer_table()) names.emplace_back(info.name);
  return names;
}

ScorerShape shape_of(const Problem& p) { return {p.batch, p.src_len, p.enc_dim, p.dec_dim, p.attn_dim}; }

std::size_t count(std::int64_t n) { return static_cast<std::size_t>(n); }

// --- the tolerance helper itself ----------------------------------------------------------

TEST(Tolerance, AcceptsRelativeErrorUpTo1e5) {
  const std::vector<double> ref = {1.0, -2.0, 100.0};
  EXPECT_TRUE(near_reference("t", std::vector<double>{1.0 + 0.9e-5, -2.0 - 1.9e-5, 100.0 + 0.9e-3}, ref));
}

TEST(Tolerance, RejectsNamingTensorIndexAndValues) {
  const std::vector<double> ref = {1.0, -2.0, 3.0};
  const ::testing::AssertionResult r = near_reference("scores", std::vector<double>{1.0, -2.0 - 3e-5, 3.0}, ref);
  ASSERT_FALSE(r);
  const std::string message = r.message();
  EXPECT_NE(message.find("scores[1]"), std::string::npos) << message;
  EXPECT_NE(message.find("-2.00003"), std::string::npos) << message;
  EXPECT_NE(message.find("reference -2"), std::string::npos) << message;
}

TEST(Tolerance, FloorsAtAQuarterOfTheLargestMagnitude) {
  // Near zero the tolerance is 1e-5 * 0.25 * 100 = 2.5e-4.
  const std::vector<double> ref = {100.0, 1e-9, -20.0};
  EXPECT_TRUE(near_reference("t", std::vector<double>{100.0, 2.4e-4, -20.0 + 2.4e-4}, ref));
  EXPECT_FALSE(near_reference("t", std::vector<double>{100.0, 2.6e-4, -20.0}, ref));
  EXPECT_FALSE(near_reference("t", std::vector<double>{100.0, 0.0, -20.0 + 2.6e-4}, ref));
}

TEST(Tolerance, MinusInfinityMustMatchExactly) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(near_reference("t", std::vector<double>{-inf, 1.0}, std::vector<double>{-inf, 1.0}));
  EXPECT_FALSE(near_reference("t", std::vector<double>{-1e30, 1.0}, std::vector<double>{-inf, 1.0}));
  EXPECT_FALSE(near_reference("t", std::vector<double>{-inf, 1.0}, std::vector<double>{0.0, 1.0}));
  EXPECT_FALSE(near_reference("t", std::vector<double>{std::nan(""), 1.0}, std::vector<double>{0.0, 1.0}));
  EXPECT_FALSE(near_reference("t", std::vector<double>{1.0}, std::vector<double>{1.0, 1.0}));
}

// --- scorer: oneDNN vs reference_score ---------------------------------------------------------

using ScorerParam = std::tuple<std::string, Case, InitKind>;

class ScorerReference : public ::testing::TestWithParam<ScorerParam> {};

std::string scorer_param_name(const ::testing::TestParamInfo<ScorerParam>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param).name + "_" + to_string(std::get<2>(info.param));
}

TEST_P(ScorerReference, OneDnnScoresMatchReference) {
  const auto& [name, c, init] = GetParam();
  const ScorerShape shape = shape_of(c.problem);
  ParamSource source(init, c.problem.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(name).make(source, shape);
  const std::vector<float> H = random_floats(count(shape.batch * shape.src_len * shape.enc_dim), 1);
  const std::vector<float> s1 = random_floats(count(shape.batch * shape.dec_dim), 2);
  const std::vector<float> s2 = random_floats(count(shape.batch * shape.dec_dim), 3);

  OneDnnContext ctx(1);
  scorer->build(ctx);
  scorer->prepare(H.data());
  std::vector<float> e(count(shape.batch * shape.src_len), std::nanf(""));
  scorer->score(s1.data(), e.data());
  EXPECT_TRUE(near_reference("scores(s1)", e, scorer->reference_score(widen(s1), widen(H))));
  // The keys of one prepare() serve any number of states.
  scorer->score(s2.data(), e.data());
  EXPECT_TRUE(near_reference("scores(s2)", e, scorer->reference_score(widen(s2), widen(H))));
}

INSTANTIATE_TEST_SUITE_P(AllScorers, ScorerReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::make_cases(kShapes)),
                                            ::testing::Values(InitKind::fast, InitKind::torch)),
                         scorer_param_name);

TEST(ScorerReference, PrepareReplacesTheKeys) {
  // A second prepare() with new annotations must not mix in the old keys.
  const ScorerShape shape{2, 5, 6, 4, 3};
  for (const ScorerInfo& info : scorer_table()) {
    ParamSource source(InitKind::fast, 1);
    const std::unique_ptr<Scorer> scorer = info.make(source, shape);
    const std::vector<float> H1 = random_floats(2 * 5 * 6, 4), H2 = random_floats(2 * 5 * 6, 5);
    const std::vector<float> s = random_floats(2 * 4, 6);
    OneDnnContext ctx(1);
    scorer->build(ctx);
    scorer->prepare(H1.data());
    std::vector<float> e(10);
    scorer->score(s.data(), e.data());
    scorer->prepare(H2.data());
    scorer->score(s.data(), e.data());
    EXPECT_TRUE(near_reference("scores", e, scorer->reference_score(widen(s), widen(H2)))) << info.name;
  }
}

TEST(ScorerReference, LessonScoresFromTheSpec) {
  // spec/torch-init.md: manual_seed(0); H = randn(2,10,16); s = randn(2,20); W, U, v;
  // scores[0, :4] = [0.4903, 0.2351, -0.1706, 0.5322].
  ParamSource source(InitKind::torch, 0);
  const std::vector<float> H = make_randn(source, 2 * 10 * 16), s = make_randn(source, 2 * 20);
  const ScorerShape shape{2, 10, 16, 20, 32};
  const std::unique_ptr<Scorer> scorer = find_scorer("additive").make(source, shape);
  OneDnnContext ctx(1);
  scorer->build(ctx);
  scorer->prepare(H.data());
  std::vector<float> e(20);
  scorer->score(s.data(), e.data());
  const std::vector<double> ref = scorer->reference_score(widen(s), widen(H));
  const double lesson[4] = {0.4903, 0.2351, -0.1706, 0.5322};
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(ref[static_cast<std::size_t>(j)], lesson[j], 0.5e-4) << "reference, j = " << j;
    EXPECT_NEAR(e[static_cast<std::size_t>(j)], lesson[j], 0.5e-4) << "oneDNN, j = " << j;
  }
}

// --- one attention step with padding ------------------------------------------------------

using StepParam = std::tuple<std::string, Case>;

class AttentionStepReference : public ::testing::TestWithParam<StepParam> {};

std::string step_param_name(const ::testing::TestParamInfo<StepParam>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
}

TEST_P(AttentionStepReference, MatchesMaskedSoftmaxAndContext) {
  const auto& [name, c] = GetParam();
  Problem p = c.problem;
  // Pad every multi-example case: lengths run from src_len down to about half of it.
  if (p.batch > 1 && p.len_min == 0) p.len_min = std::max<std::int64_t>(1, p.src_len / 2);
  const ScorerShape shape = shape_of(p);
  const std::vector<std::int64_t> lengths = source_lengths(p);
  ParamSource source(p.init, p.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(name).make(source, shape);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 7);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 8);

  OneDnnContext ctx(p.threads);
  const AttentionStep ours = run_attention_step(ctx, *scorer, shape, H, s, lengths);

  std::vector<double> e = scorer->reference_score(widen(s), widen(H));
  const std::vector<double> alpha = ref::masked_softmax(e, p.batch, p.src_len, lengths);
  const std::vector<double> context = ref::context(alpha, widen(H), p.batch, p.src_len, p.enc_dim);
  EXPECT_TRUE(near_reference("scores", ours.scores, e));
  EXPECT_TRUE(near_reference("weights", ours.weights, alpha));
  EXPECT_TRUE(near_reference("context", ours.context, context));
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t j = lengths[count(b)]; j < p.src_len; ++j) {
      EXPECT_EQ(ours.scores[count(b * p.src_len + j)], -std::numeric_limits<float>::infinity());
      EXPECT_EQ(ours.weights[count(b * p.src_len + j)], 0.0f);
    }
}

INSTANTIATE_TEST_SUITE_P(AllScorers, AttentionStepReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::make_cases(kShapes))),
                         step_param_name);

}  // namespace
}  // namespace attnbench
