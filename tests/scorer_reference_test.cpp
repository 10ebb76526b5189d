// Every scorer in both implementations (oneDNN's score(), the fused rows) against its
// reference_score, and one attention step (score, masked softmax, context) against
// ref::masked_softmax/context.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/attention_step.hpp"
#include "core/onednn_context.hpp"
#include "core/param_source.hpp"
#include "core/reference.hpp"
#include "impl_support.hpp"
#include "test_support.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::count;
using test::Case;
using test::all_impls;
using test::all_scorer_names;
using test::compute_scores;
using test::kShapes;
using test::near_reference;
using test::random_floats;
using test::widen;

ScorerShape shape_of(const Problem& p) { return {p.batch, p.src_len, p.enc_dim, p.dec_dim, p.attn_dim}; }

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

// --- scorer: oneDNN and fused vs reference_score ------------------------------------------------

// Checks scorer `name` at p (its sizes, seed, init, thread count and impl) against its
// reference_score, for two states on the keys of one prepare().
void expect_scores_match_reference(const std::string& name, const Problem& p) {
  const ScorerShape shape = shape_of(p);
  ParamSource source(p.init, p.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(name).make(source, shape);
  const std::vector<float> H = random_floats(count(shape.batch * shape.src_len * shape.enc_dim), 1);
  const std::vector<float> s1 = random_floats(count(shape.batch * shape.dec_dim), 2);
  const std::vector<float> s2 = random_floats(count(shape.batch * shape.dec_dim), 3);

  OneDnnContext ctx(p.threads);
  ASSERT_EQ(ctx.threads(), p.threads);
  scorer->build(ctx, p.impl);
  scorer->prepare(H.data());
  std::vector<float> e(count(shape.batch * shape.src_len), std::nanf(""));
  compute_scores(*scorer, p.impl, shape, s1.data(), e.data());
  EXPECT_TRUE(near_reference("scores(s1)", e, scorer->reference_score(widen(s1), widen(H))));
  // The keys of one prepare() serve any number of states.
  compute_scores(*scorer, p.impl, shape, s2.data(), e.data());
  EXPECT_TRUE(near_reference("scores(s2)", e, scorer->reference_score(widen(s2), widen(H))));
}

// Each named edge shape is its own case: (scorer, impl, edge case).
using ScorerParam = std::tuple<std::string, Impl, Case>;

class ScorerReference : public ::testing::TestWithParam<ScorerParam> {};

std::string scorer_param_name(const ::testing::TestParamInfo<ScorerParam>& info) {
  return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param)) + "_" + std::get<2>(info.param).name;
}

TEST_P(ScorerReference, ScoresMatchReference) {
  const auto& [name, impl, c] = GetParam();
  Problem p = c.problem;
  p.impl = impl;
  expect_scores_match_reference(name, p);
}

INSTANTIATE_TEST_SUITE_P(EdgeShapes, ScorerReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()), ::testing::ValuesIn(all_impls()),
                                            ::testing::ValuesIn(test::edge_cases())),
                         scorer_param_name);

// The random shapes, one test per (scorer, impl) that loops over them.
using ScorerImpl = std::tuple<std::string, Impl>;

class ScorerReferenceRandomShapes : public ::testing::TestWithParam<ScorerImpl> {};

TEST_P(ScorerReferenceRandomShapes, ScoresMatchReference) {
  const auto& [name, impl] = GetParam();
  const std::vector<Case> cases = test::random_cases();
  ASSERT_EQ(cases.size(), kShapes - test::kEdgeCount);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + " {" + repro_flags(c.problem) + "}");
    Problem p = c.problem;
    p.impl = impl;
    expect_scores_match_reference(name, p);
  }
}

INSTANTIATE_TEST_SUITE_P(AllScorers, ScorerReferenceRandomShapes,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()), ::testing::ValuesIn(all_impls())),
                         [](const ::testing::TestParamInfo<ScorerImpl>& info) {
                           return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param));
                         });

TEST(ScorerReferenceCases, EdgeAndRandomShapesCoverBothInitsAndThreadCounts) {
  for (const std::vector<Case>& cases : {test::edge_cases(), test::random_cases()}) {
    std::set<std::pair<InitKind, int>> seen;
    for (const Case& c : cases) seen.insert({c.problem.init, c.problem.threads});
    EXPECT_EQ(seen.size(), 4u) << "(init, threads) pairs among " << cases.size() << " cases";
  }
}

TEST(ScorerReference, PrepareReplacesTheKeys) {
  // A second prepare() with new annotations must not mix in the old keys.
  const ScorerShape shape{2, 5, 6, 4, 3};
  for (const ScorerInfo& info : scorer_table())
    for (Impl impl : all_impls()) {
      SCOPED_TRACE(std::string(info.name) + " " + to_string(impl));
      ParamSource source(InitKind::fast, 1);
      const std::unique_ptr<Scorer> scorer = info.make(source, shape);
      const std::vector<float> H1 = random_floats(2 * 5 * 6, 4), H2 = random_floats(2 * 5 * 6, 5);
      const std::vector<float> s = random_floats(2 * 4, 6);
      OneDnnContext ctx(1);
      scorer->build(ctx, impl);
      scorer->prepare(H1.data());
      std::vector<float> e(10);
      compute_scores(*scorer, impl, shape, s.data(), e.data());
      scorer->prepare(H2.data());
      compute_scores(*scorer, impl, shape, s.data(), e.data());
      EXPECT_TRUE(near_reference("scores", e, scorer->reference_score(widen(s), widen(H2))));
    }
}

// --- the formulas of DESIGN.md's scorer table, written out here ---------------------------

// y = x W^T for one row x, W (out, in) row-major, in double.
std::vector<double> apply(const LinearParams& W, const double* x) {
  std::vector<double> y(count(W.out), 0.0);
  for (std::int64_t o = 0; o < W.out; ++o)
    for (std::int64_t i = 0; i < W.in; ++i) y[count(o)] += W.weight[count(o * W.in + i)] * x[i];
  return y;
}

// Draws the parameters of `name` from `twin` in the table's order and evaluates its
// formula; empty if the table has no such scorer.
std::vector<double> design_formula(const std::string& name, ParamSource& twin, const ScorerShape& sh,
                                   const std::vector<double>& s, const std::vector<double>& H) {
  const std::int64_t B = sh.batch, L = sh.src_len, E = sh.enc_dim, D = sh.dec_dim, A = sh.attn_dim;
  std::vector<double> e(count(B * L));
  const auto h = [&](std::int64_t b, std::int64_t j) { return H.data() + (b * L + j) * E; };
  if (name == "additive" || name == "additive_linear") {  // v . act(W s + U h_j)
    const LinearParams W = make_linear(twin, D, A, false), U = make_linear(twin, E, A, false),
                       v = make_linear(twin, A, 1, false);
    for (std::int64_t b = 0; b < B; ++b) {
      const std::vector<double> ws = apply(W, s.data() + b * D);
      for (std::int64_t j = 0; j < L; ++j) {
        const std::vector<double> uh = apply(U, h(b, j));
        double sum = 0.0;
        for (std::int64_t a = 0; a < A; ++a)
          sum += v.weight[count(a)] *
                 (name == "additive" ? std::tanh(ws[count(a)] + uh[count(a)]) : ws[count(a)] + uh[count(a)]);
        e[count(b * L + j)] = sum;
      }
    }
  } else if (name == "dot" || name == "scaled_dot") {  // (W s) . (U h_j) [/ sqrt(A)]
    const LinearParams W = make_linear(twin, D, A, false), U = make_linear(twin, E, A, false);
    const double scale = name == "dot" ? 1.0 : 1.0 / std::sqrt(static_cast<double>(A));
    for (std::int64_t b = 0; b < B; ++b) {
      const std::vector<double> ws = apply(W, s.data() + b * D);
      for (std::int64_t j = 0; j < L; ++j) {
        const std::vector<double> uh = apply(U, h(b, j));
        double sum = 0.0;
        for (std::int64_t a = 0; a < A; ++a) sum += ws[count(a)] * uh[count(a)];
        e[count(b * L + j)] = sum * scale;
      }
    }
  } else if (name == "general") {  // s . (W h_j), W: Linear(E, D)
    const LinearParams W = make_linear(twin, E, D, false);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < L; ++j) {
        const std::vector<double> wh = apply(W, h(b, j));
        double sum = 0.0;
        for (std::int64_t d = 0; d < D; ++d) sum += s[count(b * D + d)] * wh[count(d)];
        e[count(b * L + j)] = sum;
      }
  } else if (name == "location") {  // (W_a s)_j, W_a: Linear(D, L); H unused
    const LinearParams W = make_linear(twin, D, L, false);
    for (std::int64_t b = 0; b < B; ++b) {
      const std::vector<double> ws = apply(W, s.data() + b * D);
      for (std::int64_t j = 0; j < L; ++j) e[count(b * L + j)] = ws[count(j)];
    }
  } else if (name == "mlp") {  // v . tanh(W s + b + U h_j), drawn U, W (with bias), v
    const LinearParams U = make_linear(twin, E, A, false), W = make_linear(twin, D, A, true),
                       v = make_linear(twin, A, 1, false);
    for (std::int64_t b = 0; b < B; ++b) {
      const std::vector<double> ws = apply(W, s.data() + b * D);
      for (std::int64_t j = 0; j < L; ++j) {
        const std::vector<double> uh = apply(U, h(b, j));
        double sum = 0.0;
        for (std::int64_t a = 0; a < A; ++a)
          sum += v.weight[count(a)] * std::tanh(ws[count(a)] + W.bias[count(a)] + uh[count(a)]);
        e[count(b * L + j)] = sum;
      }
    }
  } else {
    e.clear();
  }
  return e;
}

class DesignFormula : public ::testing::TestWithParam<std::string> {};

TEST_P(DesignFormula, ScorerComputesTheTableFormulaWithTorchDrawOrder) {
  const std::string name = GetParam();
  const ScorerShape shape{3, 7, 10, 9, 5};
  for (InitKind init : {InitKind::fast, InitKind::torch}) {
    SCOPED_TRACE(to_string(init));
    ParamSource source(init, 4), twin(init, 4);
    const std::unique_ptr<Scorer> scorer = find_scorer(name).make(source, shape);
    const std::vector<float> H = random_floats(3 * 7 * 10, 13), s = random_floats(3 * 9, 14);
    const std::vector<double> expected = design_formula(name, twin, shape, widen(s), widen(H));
    ASSERT_FALSE(expected.empty()) << "add the formula of '" << name << "' (DESIGN.md's table) to design_formula()";
    EXPECT_TRUE(near_reference("reference_score", scorer->reference_score(widen(s), widen(H)), expected));
    for (Impl impl : all_impls()) {
      OneDnnContext ctx(1);
      scorer->build(ctx, impl);
      scorer->prepare(H.data());
      std::vector<float> e(3 * 7);
      compute_scores(*scorer, impl, shape, s.data(), e.data());
      EXPECT_TRUE(near_reference(to_string(impl) + " scores", e, expected));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllScorers, DesignFormula, ::testing::ValuesIn(all_scorer_names()),
                         [](const auto& info) { return info.param; });

// softmax over each row of (B, L) logits, in double.
std::vector<double> row_softmax(const std::vector<double>& x, std::int64_t batch, std::int64_t src_len) {
  std::vector<double> e = x;
  const std::vector<std::int64_t> full(count(batch), src_len);
  return ref::masked_softmax(e, batch, src_len, full);
}

TEST(ScorerReference, AlignmentLogitsGiveTheSameWeightsForEveryState) {
  // alignment_logits(), where a scorer has them, differ from score()'s output by a
  // constant per example: their softmax equals the reference's, whatever s is.
  const ScorerShape shape{3, 17, 34, 33, 17};
  bool additive_linear_has_them = false;
  for (const ScorerInfo& info : scorer_table())
    for (Impl impl : all_impls()) {
      SCOPED_TRACE(std::string(info.name) + " " + to_string(impl));
      ParamSource source(InitKind::torch, 2);
      const std::unique_ptr<Scorer> scorer = info.make(source, shape);
      const std::vector<float> H = random_floats(3 * 17 * 34, 9);
      OneDnnContext ctx(1);
      scorer->build(ctx, impl);
      scorer->prepare(H.data());
      const float* logits = scorer->alignment_logits();
      if (logits == nullptr) continue;
      additive_linear_has_them |= std::string(info.name) == "additive_linear";
      const std::vector<float> before(logits, logits + 3 * 17);
      std::vector<float> e(3 * 17);
      for (std::uint32_t seed : {10u, 11u, 12u}) {
        const std::vector<float> s = random_floats(3 * 33, seed, -3.f, 3.f);
        compute_scores(*scorer, impl, shape, s.data(), e.data());
        const std::vector<float> after(scorer->alignment_logits(), scorer->alignment_logits() + 3 * 17);
        EXPECT_EQ(after, before) << "scoring changed the alignment logits";
        EXPECT_TRUE(near_reference("softmax(alignment_logits)", row_softmax(widen(after), 3, 17),
                                   row_softmax(scorer->reference_score(widen(s), widen(H)), 3, 17)));
        // The scores themselves still carry the state's term.
        EXPECT_TRUE(near_reference("scores", e, scorer->reference_score(widen(s), widen(H))));
      }
    }
  EXPECT_TRUE(additive_linear_has_them);
}

TEST(ScorerReference, LessonScoresFromTheSpec) {
  // spec/torch-init.md: manual_seed(0); H = randn(2,10,16); s = randn(2,20); W, U, v;
  // scores[0, :4] = [0.4903, 0.2351, -0.1706, 0.5322].
  ParamSource source(InitKind::torch, 0);
  const std::vector<float> H = make_randn(source, 2 * 10 * 16), s = make_randn(source, 2 * 20);
  const ScorerShape shape{2, 10, 16, 20, 32};
  const std::unique_ptr<Scorer> scorer = find_scorer("additive").make(source, shape);
  const std::vector<double> ref = scorer->reference_score(widen(s), widen(H));
  const double lesson[4] = {0.4903, 0.2351, -0.1706, 0.5322};
  for (int j = 0; j < 4; ++j)
    EXPECT_NEAR(ref[static_cast<std::size_t>(j)], lesson[j], 0.5e-4) << "reference, j = " << j;
  for (Impl impl : all_impls()) {
    OneDnnContext ctx(1);
    scorer->build(ctx, impl);
    scorer->prepare(H.data());
    std::vector<float> e(20);
    compute_scores(*scorer, impl, shape, s.data(), e.data());
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(e[static_cast<std::size_t>(j)], lesson[j], 0.5e-4) << to_string(impl) << ", j = " << j;
  }
}

// --- one attention step with padding ------------------------------------------------------

using StepParam = std::tuple<std::string, Case>;

class AttentionStepReference : public ::testing::TestWithParam<StepParam> {};

std::string step_param_name(const ::testing::TestParamInfo<StepParam>& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
}

// Scorer `name`'s step on point p (padded: lengths from src_len down to about half of it
// when p has several examples and no len_min) against the double reference: scores, weights
// and context within p.dtype's tolerance, masked scores -inf and their weights 0.
void expect_step_matches_reference(const std::string& name, Problem p) {
  if (p.batch > 1 && p.len_min == 0) p.len_min = std::max<std::int64_t>(1, p.src_len / 2);
  const ScorerShape shape = shape_of(p);
  const std::vector<std::int64_t> lengths = source_lengths(p);
  ParamSource source(p.init, p.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(name).make(source, shape);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 7);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 8);

  OneDnnContext ctx(p.threads, p.dtype);
  const AttentionStep ours = run_attention_step(ctx, *scorer, shape, H, s, lengths, p.impl);

  std::vector<double> e = scorer->reference_score(widen(s), widen(H));
  const std::vector<double> alpha = ref::masked_softmax(e, p.batch, p.src_len, lengths);
  const std::vector<double> context = ref::context(alpha, widen(H), p.batch, p.src_len, p.enc_dim);
  const test::Tolerance tol = test::tolerance_for(p.dtype);
  EXPECT_TRUE(near_reference("scores", ours.scores, e, tol));
  EXPECT_TRUE(near_reference("weights", ours.weights, alpha, tol));
  EXPECT_TRUE(near_reference("context", ours.context, context, tol));
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t j = lengths[count(b)]; j < p.src_len; ++j) {
      EXPECT_EQ(ours.scores[count(b * p.src_len + j)], -std::numeric_limits<float>::infinity());
      EXPECT_EQ(ours.weights[count(b * p.src_len + j)], 0.0f);
    }
}

TEST_P(AttentionStepReference, MatchesMaskedSoftmaxAndContext) {
  const auto& [name, c] = GetParam();
  expect_step_matches_reference(name, c.problem);
}

INSTANTIATE_TEST_SUITE_P(AllScorers, AttentionStepReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::make_cases(kShapes))),
                         step_param_name);

// Every scorer's fused step (Impl::fused), same checks.
INSTANTIATE_TEST_SUITE_P(Fused, AttentionStepReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_impl(test::make_cases(kShapes),
                                                                                Impl::fused))),
                         step_param_name);

// Every scorer's scores, weights and context with --dtype bf16 (test::kBf16Tolerance).
INSTANTIATE_TEST_SUITE_P(Bf16, AttentionStepReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_dtype(test::make_cases(kShapes),
                                                                                 DType::bf16))),
                         step_param_name);

// The fused step with --dtype bf16: keys and annotations stored as bf16, the same tolerance.
INSTANTIATE_TEST_SUITE_P(FusedBf16, AttentionStepReference,
                         ::testing::Combine(::testing::ValuesIn(all_scorer_names()),
                                            ::testing::ValuesIn(test::with_impl(
                                                test::with_dtype(test::make_cases(kShapes), DType::bf16),
                                                Impl::fused))),
                         step_param_name);

// Every scorer's fused bf16 step with its query forced to bf16 and to f32
// (ATTNBENCH_FUSED_BF16_QUERY), so that every machine checks both paths against the double
// reference, not only the one its CPU takes. At B8 L24 E40 D48 A32 the queries of additive,
// mlp, dot and scaled_dot (from the keys or from H: D > A) and location are oneDNN matmuls
// (9K to 15K multiply-adds, over kSmallProjectionMacs); general and additive_linear have none.
class FusedBf16QueryReference : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedBf16QueryReference, BothPrecisionsMatchTheReference) {
  Problem p;
  p.batch = 8;
  p.src_len = 24;
  p.enc_dim = 40;
  p.dec_dim = 48;
  p.attn_dim = 32;
  p.impl = Impl::fused;
  p.dtype = DType::bf16;
  for (const char* setting : {"bf16", "f32"}) {
    SCOPED_TRACE(std::string("ATTNBENCH_FUSED_BF16_QUERY=") + setting);
    const test::ScopedEnv query("ATTNBENCH_FUSED_BF16_QUERY", setting);
    expect_step_matches_reference(GetParam(), p);
  }
}

INSTANTIATE_TEST_SUITE_P(AllScorers, FusedBf16QueryReference, ::testing::ValuesIn(all_scorer_names()),
                         [](const auto& info) { return info.param; });

TEST(FusedBf16QuerySetting, ReachesTheStep) {
  // additive's query at that point, 12K multiply-adds: its scores differ by the query's rounding.
  const ScorerShape shape{8, 24, 40, 48, 32};
  const std::vector<std::int64_t> lengths(8, 24);
  const std::vector<float> H = random_floats(count(8 * 24 * 40), 7), s = random_floats(count(8 * 48), 8);
  std::vector<std::vector<float>> scores;
  for (const char* setting : {"bf16", "f32"}) {
    const test::ScopedEnv query("ATTNBENCH_FUSED_BF16_QUERY", setting);
    ParamSource source(InitKind::fast, 1);
    const std::unique_ptr<Scorer> scorer = find_scorer("additive").make(source, shape);
    OneDnnContext ctx(1, DType::bf16);
    scores.push_back(run_attention_step(ctx, *scorer, shape, H, s, lengths, Impl::fused).scores);
  }
  EXPECT_NE(scores[0], scores[1]);
}

}  // namespace
}  // namespace attnbench
