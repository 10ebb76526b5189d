// The fused attention step (Impl::fused) as a whole: against the oneDNN path, one pass
// against the separate stages, parallel against serial, and the oneDNN query path of
// large shapes against the double reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/attention_step.hpp"
#include "core/fused_attend.hpp"
#include "core/fused_projection.hpp"
#include "core/harness.hpp"
#include "core/reference.hpp"
#include "impl_support.hpp"
#include "test_support.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::all_scorer_names;
using test::near_reference;
using test::random_floats;
using test::widen;

std::size_t count(std::int64_t n) { return static_cast<std::size_t>(n); }

ScorerShape shape_of(const Problem& p) { return {p.batch, p.src_len, p.enc_dim, p.dec_dim, p.attn_dim}; }

// Several decode steps with padding (lengths 17, 11, 5); serial in the fused step.
Problem padded_point(const std::string& scorer, Impl impl) { return test::multi_step_point(scorer, InitKind::torch, impl); }

// The same with B * D * A = 10240 >= kSmallProjectionMacs: the fused W s runs on oneDNN.
Problem large_query_point(const std::string& scorer, Impl impl) {
  Problem p = padded_point(scorer, impl);
  p.batch = 4;
  p.dec_dim = 64;
  p.attn_dim = 40;
  return p;
}

// Big enough for the fused step to spread its examples over 2 threads.
Problem parallel_point(const std::string& scorer) {
  Problem p = padded_point(scorer, Impl::fused);
  p.batch = 8;
  p.src_len = 64;
  p.enc_dim = 128;
  p.dec_dim = 20;
  p.attn_dim = 128;
  p.len_min = 9;
  p.threads = 2;
  return p;
}

// The harness's traced decode of p and, when `reference` is set, ref::decode's.
std::pair<DecodeTrace, DecodeTrace> decode(const Problem& p, bool reference = false) {
  Model model = make_model(p, find_scorer(p.scorer).make);
  OneDnnContext ctx(p.threads);
  Harness harness(ctx, model);
  return {harness.run_traced(), reference ? ref::decode(model) : DecodeTrace{}};
}

class FusedStep : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedStep, DecodeMatchesReferenceAndAgreesWithOneDnn) {
  // Each impl is within kRelTol of the double reference, so the two are within
  // 2 kRelTol of each other.
  const test::Tolerance both{2 * test::kRelTol, test::kFloorFraction};
  // W s takes the loop at one point and oneDNN at the other.
  const auto query_macs = [](const Problem& p) { return p.batch * p.dec_dim * p.attn_dim; };
  ASSERT_LT(query_macs(padded_point(GetParam(), Impl::fused)), kSmallProjectionMacs);
  ASSERT_GE(query_macs(large_query_point(GetParam(), Impl::fused)), kSmallProjectionMacs);
  for (const auto point : {padded_point, large_query_point}) {
    const Problem p = point(GetParam(), Impl::fused);
    SCOPED_TRACE(repro_flags(p));
    const auto [fused, ref] = decode(p, true);
    const DecodeTrace onednn = decode(point(GetParam(), Impl::onednn)).first;
    EXPECT_EQ(fused.annotations, onednn.annotations);  // the encoder is the same oneDNN code
    ASSERT_EQ(fused.steps.size(), onednn.steps.size());
    ASSERT_EQ(fused.steps.size(), ref.steps.size());
    for (std::size_t s = 0; s < onednn.steps.size(); ++s) {
      SCOPED_TRACE("step " + std::to_string(s));
      const StepRecord &a = fused.steps[s], &b = onednn.steps[s], &r = ref.steps[s];
      EXPECT_TRUE(near_reference("scores", a.scores, r.scores));
      EXPECT_TRUE(near_reference("weights", a.weights, r.weights));
      EXPECT_TRUE(near_reference("context", a.context, r.context));
      EXPECT_TRUE(near_reference("state", a.state, r.state));
      EXPECT_TRUE(near_reference("logits", a.logits, r.logits));
      EXPECT_TRUE(near_reference("scores vs oneDNN", a.scores, b.scores, both));
      EXPECT_TRUE(near_reference("weights vs oneDNN", a.weights, b.weights, both));
      EXPECT_TRUE(near_reference("context vs oneDNN", a.context, b.context, both));
      EXPECT_TRUE(near_reference("logits vs oneDNN", a.logits, b.logits, both));
    }
  }
}

TEST_P(FusedStep, OnePassEqualsScoreThenAttendBitForBit) {
  for (const Problem& p : {padded_point(GetParam(), Impl::fused), parallel_point(GetParam())}) {
    SCOPED_TRACE(repro_flags(p));
    Model model = make_model(p, find_scorer(p.scorer).make);
    OneDnnContext ctx(p.threads);
    Harness harness(ctx, model);
    harness.encode();
    harness.prepare_keys();
    harness.score();
    harness.attend();
    const std::vector<float> scores = harness.scores(), weights = harness.weights(), context = harness.context();
    harness.score_and_attend();
    EXPECT_EQ(harness.scores(), scores);
    EXPECT_EQ(harness.weights(), weights);
    EXPECT_EQ(harness.context(), context);
    const std::vector<std::int64_t> lengths = source_lengths(p);
    for (std::int64_t b = 0; b < p.batch; ++b)
      for (std::int64_t j = lengths[count(b)]; j < p.src_len; ++j) {
        EXPECT_EQ(scores[count(b * p.src_len + j)], -std::numeric_limits<float>::infinity());
        EXPECT_EQ(weights[count(b * p.src_len + j)], 0.f);
      }
  }
}

TEST_P(FusedStep, TwoThreadsGiveTheSameBitsAsOneAndMatchReference) {
  const Problem p = parallel_point(GetParam());
  const ScorerShape shape = shape_of(p);
  const std::vector<std::int64_t> lengths = source_lengths(p);
  const FusedAttend serial(1, shape, lengths), parallel(2, shape, lengths);
  ASSERT_FALSE(serial.parallel());
  ASSERT_TRUE(parallel.parallel()) << fused_step_macs(shape) << " multiply-adds";

  ParamSource source(p.init, p.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(p.scorer).make(source, shape);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 11);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 12);
  OneDnnContext ctx(2);
  scorer->build(ctx, Impl::fused);
  scorer->prepare(H.data());
  const auto run = [&](const FusedAttend& attend) {
    AttentionStep out{std::vector<float>(count(p.batch * p.src_len), std::nanf("")),
                      std::vector<float>(count(p.batch * p.src_len), std::nanf("")),
                      std::vector<float>(count(p.batch * p.enc_dim), std::nanf(""))};
    attend.step(*scorer, s.data(), H.data(), out.scores.data(), out.weights.data(), out.context.data());
    return out;
  };
  const AttentionStep one = run(serial), two = run(parallel);
  EXPECT_EQ(two.scores, one.scores);
  EXPECT_EQ(two.weights, one.weights);
  EXPECT_EQ(two.context, one.context);

  std::vector<double> e = scorer->reference_score(widen(s), widen(H));
  const std::vector<double> alpha = ref::masked_softmax(e, p.batch, p.src_len, lengths);
  EXPECT_TRUE(near_reference("scores", two.scores, e));
  EXPECT_TRUE(near_reference("weights", two.weights, alpha));
  EXPECT_TRUE(near_reference("context", two.context, ref::context(alpha, widen(H), p.batch, p.src_len, p.enc_dim)));
}

TEST_P(FusedStep, LargeQueryOnOneDnnMatchesReference) {
  // B * D * A = 78000 >= kSmallProjectionMacs: W s runs on a LinearOp, not the loop
  // (the reference suites' small shapes take both paths).
  Problem p = padded_point(GetParam(), Impl::fused);
  p.batch = 4;
  p.src_len = 9;
  p.enc_dim = 64;
  p.dec_dim = 130;
  p.attn_dim = 150;
  p.len_min = 2;
  ASSERT_GE(p.batch * p.dec_dim * p.attn_dim, kSmallProjectionMacs);
  const ScorerShape shape = shape_of(p);
  const std::vector<std::int64_t> lengths = source_lengths(p);
  ParamSource source(p.init, p.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(p.scorer).make(source, shape);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 13);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 14);
  OneDnnContext ctx(1);
  const AttentionStep ours = run_attention_step(ctx, *scorer, shape, H, s, lengths, Impl::fused);
  std::vector<double> e = scorer->reference_score(widen(s), widen(H));
  const std::vector<double> alpha = ref::masked_softmax(e, p.batch, p.src_len, lengths);
  EXPECT_TRUE(near_reference("scores", ours.scores, e));
  EXPECT_TRUE(near_reference("weights", ours.weights, alpha));
  EXPECT_TRUE(near_reference("context", ours.context, ref::context(alpha, widen(H), p.batch, p.src_len, p.enc_dim)));
}

INSTANTIATE_TEST_SUITE_P(AllScorers, FusedStep, ::testing::ValuesIn(all_scorer_names()),
                         [](const auto& info) { return info.param; });

TEST(FusedStepThreshold, LessonSizesRunSerialBigBatchesParallel) {
  const ScorerShape lesson{2, 10, 16, 20, 32}, bahdanau{80, 50, 2000, 1000, 1000};
  EXPECT_FALSE(FusedAttend(2, lesson, {10, 10}).parallel());
  EXPECT_TRUE(FusedAttend(2, bahdanau, std::vector<std::int64_t>(80, 50)).parallel());
  EXPECT_FALSE(FusedAttend(1, bahdanau, std::vector<std::int64_t>(80, 50)).parallel());
  EXPECT_EQ(fused_step_macs(lesson), 2 * 10 * (32 + 16));
}

}  // namespace
}  // namespace attnbench
