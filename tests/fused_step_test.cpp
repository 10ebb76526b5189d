// The fused attention step (Impl::fused) as a whole: against the oneDNN path, one pass
// against the separate stages, parallel against serial, and the oneDNN query path of
// large shapes against the double reference (its plan: fused_step_plan_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/attention_step.hpp"
#include "core/fused_attend.hpp"
#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
#include "core/harness.hpp"
#include "core/reference.hpp"
#include "impl_support.hpp"
#include "test_support.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::count;
using test::all_scorer_names;
using test::near_reference;
using test::random_floats;
using test::widen;

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

// padded_point on the fused path with the sizes of `shape` and lengths from len_min up.
Problem fused_point(const std::string& scorer, const ScorerShape& shape, std::int64_t len_min) {
  Problem p = padded_point(scorer, Impl::fused);
  p.batch = shape.batch;
  p.src_len = shape.src_len;
  p.enc_dim = shape.enc_dim;
  p.dec_dim = shape.dec_dim;
  p.attn_dim = shape.attn_dim;
  p.len_min = len_min;
  return p;
}

// Big enough for every scorer's fused step to spread its examples over 2 threads.
Problem parallel_point(const std::string& scorer) {
  Problem p = fused_point(scorer, {8, 128, 256, 64, 128}, 9);
  p.threads = 2;
  return p;
}

// Expects `ours`, the step of `scorer` on s and H at p's sizes and `lengths`, within `tolerance`
// of the double reference: scores, masked softmax, context.
void expect_near_reference(const AttentionStep& ours, const Scorer& scorer, const Problem& p,
                           const std::vector<std::int64_t>& lengths, const std::vector<float>& s,
                           const std::vector<float>& H, test::Tolerance tolerance = test::kF32Tolerance) {
  std::vector<double> e = scorer.reference_score(widen(s), widen(H));
  const std::vector<double> alpha = ref::masked_softmax(e, p.batch, p.src_len, lengths);
  EXPECT_TRUE(near_reference("scores", ours.scores, e, tolerance));
  EXPECT_TRUE(near_reference("weights", ours.weights, alpha, tolerance));
  EXPECT_TRUE(near_reference("context", ours.context, ref::context(alpha, widen(H), p.batch, p.src_len, p.enc_dim),
                             tolerance));
}

// The harness's traced decode of p and, when `reference` is set, ref::decode's.
std::pair<DecodeTrace, DecodeTrace> decode(const Problem& p, bool reference = false) {
  Model model = make_model(p, find_scorer(p.scorer).make);
  OneDnnContext ctx(p.threads);
  Harness harness(ctx, model);
  return {harness.run_traced(), reference ? ref::decode(model) : DecodeTrace{}};
}

// p's scorer built for Impl::fused on ctx and prepared on H, with a FusedAttend for it on
// `threads` threads in `dtype`, prepared too; step() writes one step into NaN-filled outputs.
struct PreparedStep {
  std::unique_ptr<Scorer> scorer;
  FusedAttend attend;

  PreparedStep(const Problem& p, OneDnnContext& ctx, int threads, DType dtype, const std::vector<std::int64_t>& lengths,
               const std::vector<float>& H) {
    ParamSource source(p.init, p.seed);
    scorer = find_scorer(p.scorer).make(source, shape_of(p));
    scorer->build(ctx, Impl::fused);
    scorer->prepare(H.data());
    attend = FusedAttend(threads, shape_of(p), lengths, dtype, scorer->fused_score_work(shape_of(p)));
    attend.prepare(*scorer, H.data());
  }
  AttentionStep step(const Problem& p, const std::vector<float>& s, const std::vector<float>& H) {
    return step_of(attend, *scorer, p, s, H);
  }
  // One FusedAttend::step of `attend` for `scorer` into outputs at p's sizes, NaN until written.
  static AttentionStep step_of(FusedAttend& attend, Scorer& scorer, const Problem& p, const std::vector<float>& s,
                               const std::vector<float>& H) {
    AttentionStep out{std::vector<float>(count(p.batch * p.src_len), std::nanf("")),
                      std::vector<float>(count(p.batch * p.src_len), std::nanf("")),
                      std::vector<float>(count(p.batch * p.enc_dim), std::nanf(""))};
    attend.step(scorer, s.data(), H.data(), out.scores.data(), out.weights.data(), out.context.data());
    return out;
  }
};

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
  ParamSource source(p.init, p.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(p.scorer).make(source, shape);
  const double work = scorer->fused_score_work(shape);
  FusedAttend serial(1, shape, lengths, DType::f32, work), parallel(2, shape, lengths, DType::f32, work);
  ASSERT_FALSE(serial.parallel());
  ASSERT_TRUE(parallel.parallel()) << fused_step_work(shape, work) << " multiply-add equivalents";

  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 11);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 12);
  OneDnnContext ctx(2);
  scorer->build(ctx, Impl::fused);
  scorer->prepare(H.data());
  const AttentionStep one = PreparedStep::step_of(serial, *scorer, p, s, H),
                      two = PreparedStep::step_of(parallel, *scorer, p, s, H);
  EXPECT_EQ(two.scores, one.scores);
  EXPECT_EQ(two.weights, one.weights);
  EXPECT_EQ(two.context, one.context);
  expect_near_reference(two, *scorer, p, lengths, s, H);
}

TEST_P(FusedStep, ConsecutiveStepsInAlternatingOrderGiveTheSameBits) {
  // The parallel point's rows (B8 L128, E256, A128: 1 MB in f32) stay in the caches, so each
  // pass visits its examples in the order opposite to the pass before: three steps on 1 and
  // on 2 threads, f32 and bf16, each flipping the order, give the first step's bits.
  const Problem p = parallel_point(GetParam());
  const ScorerShape shape = shape_of(p);
  ASSERT_TRUE(alternates_example_order(shape, DType::f32));
  const std::vector<std::int64_t> lengths = source_lengths(p);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 21);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 22);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    for (const int threads : {1, 2}) {
      SCOPED_TRACE(to_string(dtype) + ", " + std::to_string(threads) + " threads");
      OneDnnContext ctx(threads, dtype);
      PreparedStep prepared(p, ctx, threads, dtype, lengths, H);
      std::vector<AttentionStep> steps;
      for (int step = 0; step < 3; ++step) {
        const bool backwards = prepared.attend.next_pass_backwards();
        steps.push_back(prepared.step(p, s, H));
        EXPECT_NE(prepared.attend.next_pass_backwards(), backwards) << "step " << step;
      }
      for (std::size_t step = 1; step < steps.size(); ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        EXPECT_EQ(steps[step].scores, steps[0].scores);
        EXPECT_EQ(steps[step].weights, steps[0].weights);
        EXPECT_EQ(steps[step].context, steps[0].context);
      }
      expect_near_reference(steps[0], *prepared.scorer, p, lengths, s, H, test::tolerance_for(dtype));
    }
  }
}

TEST_P(FusedStep, EachPartsQueryAloneScoresThatPartsExamplesBitForBit) {
  // Every scorer's fused query covers its part of 2 (Scorer::fused_query_covers_part) at the
  // parallel point, f32 and bf16: after only part p's fused_query, on a freshly prepared
  // scorer, the scores of p's examples (even_part) are those of a query of the whole batch.
  const Problem p = parallel_point(GetParam());
  const ScorerShape shape = shape_of(p);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 17);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 18);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    OneDnnContext ctx(2, dtype);
    const auto prepared = [&] {
      ParamSource source(p.init, p.seed);
      std::unique_ptr<Scorer> scorer = find_scorer(p.scorer).make(source, shape);
      scorer->build(ctx, Impl::fused);
      scorer->prepare(H.data());
      return scorer;
    };
    const auto scores_of = [&](const Scorer& scorer, RowRange examples) {
      std::vector<float> e(count(examples.count * p.src_len), std::nanf(""));
      for (std::int64_t i = 0; i < examples.count; ++i)
        scorer.fused_score_row(examples.first + i, p.src_len, e.data() + i * p.src_len, {});
      return e;
    };
    const std::unique_ptr<Scorer> whole = prepared();
    whole->fused_query(s.data(), 0, 1);
    for (int part = 0; part < 2; ++part) {
      SCOPED_TRACE("part " + std::to_string(part));
      const std::unique_ptr<Scorer> scorer = prepared();
      ASSERT_TRUE(scorer->fused_query_covers_part(2));
      scorer->fused_query(s.data(), part, 2);
      const RowRange examples = even_part(p.batch, part, 2);
      EXPECT_EQ(scores_of(*scorer, examples), scores_of(*whole, examples));
    }
  }
}

TEST_P(FusedStep, EqualLengthsNeedNoBarrierAfterTheQueryAndGiveOneThreadsBits) {
  // With equal lengths the examples' parts are the even parts, so no thread of a parallel
  // step waits for the other's query; with falling lengths (len_min 9) the parts differ and
  // they do. Either way 2 threads give 1 thread's bits, f32 and bf16, each step on a freshly
  // prepared scorer and FusedAttend (the 2-thread one first), so that no part can read a
  // query left by another run.
  for (const auto& [len_min, dtype] : {std::pair{std::int64_t{0}, DType::f32}, std::pair{std::int64_t{9}, DType::f32},
                                       std::pair{std::int64_t{0}, DType::bf16}}) {
    Problem p = parallel_point(GetParam());
    p.len_min = len_min;
    SCOPED_TRACE(repro_flags(p) + " " + to_string(dtype));
    const std::vector<std::int64_t> lengths = source_lengths(p);
    ASSERT_EQ(first_example_of_part(length_prefix_of(lengths), 1, 2) == even_part(p.batch, 1, 2).first, len_min == 0);
    const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 19);
    const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 20);
    OneDnnContext ctx(2, dtype);
    const auto step_on = [&](int threads) {
      PreparedStep prepared(p, ctx, threads, dtype, lengths, H);
      if (threads == 2) {
        EXPECT_TRUE(prepared.attend.parallel());
        EXPECT_EQ(prepared.attend.waits_for_whole_query(*prepared.scorer, 2), len_min != 0);
      }
      return prepared.step(p, s, H);
    };
    const AttentionStep two = step_on(2), one = step_on(1);
    EXPECT_EQ(two.scores, one.scores);
    EXPECT_EQ(two.weights, one.weights);
    EXPECT_EQ(two.context, one.context);
  }
}

TEST_P(FusedStep, LargeQueryOnOneDnnMatchesReference) {
  // B * D * A = 78000 >= kSmallProjectionMacs: W s runs on a LinearOp, not the loop
  // (the reference suites' small shapes take both paths).
  const Problem p = fused_point(GetParam(), {4, 9, 64, 130, 150}, 2);
  ASSERT_GE(p.batch * p.dec_dim * p.attn_dim, kSmallProjectionMacs);
  const ScorerShape shape = shape_of(p);
  const std::vector<std::int64_t> lengths = source_lengths(p);
  ParamSource source(p.init, p.seed);
  const std::unique_ptr<Scorer> scorer = find_scorer(p.scorer).make(source, shape);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 13);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 14);
  OneDnnContext ctx(1);
  expect_near_reference(run_attention_step(ctx, *scorer, shape, H, s, lengths, Impl::fused), *scorer, p, lengths, s, H);
}

TEST_P(FusedStep, StaticAlignmentKeepsTheFirstStepsWeightsAndContextBitForBit) {
  // additive_linear's weights and context do not depend on the step: FusedAttend::prepare
  // computes them once and every step copies them, the same bits as the first step's attend().
  const Problem p = parallel_point(GetParam());
  Model model = make_model(p, find_scorer(p.scorer).make);
  OneDnnContext ctx(p.threads);
  Harness harness(ctx, model);
  harness.encode();
  harness.prepare_keys();
  harness.score();
  harness.attend();
  const std::vector<float> weights = harness.weights(), context = harness.context();
  const DecodeTrace trace = harness.run_traced();
  ASSERT_GE(trace.steps.size(), 2u);
  const bool is_static = model.scorer->alignment_logits() != nullptr;
  EXPECT_EQ(is_static, p.scorer == "additive_linear");
  for (std::size_t t = 1; t < trace.steps.size(); ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    // Static: the same weights and context at every step; otherwise the state moves them.
    EXPECT_EQ(trace.steps[t].weights == trace.steps[0].weights, is_static);
    EXPECT_EQ(trace.steps[t].context == trace.steps[0].context, is_static);
  }
  if (is_static) {
    EXPECT_EQ(trace.steps[0].weights, widen(weights));
    EXPECT_EQ(trace.steps[0].context, widen(context));
  }
}

TEST_P(FusedStep, StreamedAnnotationsChangeNoBitAndMatchReference) {
  // 4 x 1024 x 1024 annotations: 16 MiB in f32 and 8 MiB in bf16, so the step prefetches
  // them (the bf16 context pass ahead of itself, additive's and mlp's score pass each
  // example's rows); the prefetches must change no result.
  const Problem p = fused_point(GetParam(), {4, 1024, 1024, 16, 16}, 300);
  const ScorerShape shape = shape_of(p);
  const std::vector<std::int64_t> lengths = source_lengths(p);
  const std::vector<float> H = random_floats(count(p.batch * p.src_len * p.enc_dim), 15);
  const std::vector<float> s = random_floats(count(p.batch * p.dec_dim), 16);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    ASSERT_TRUE(streams_annotations(shape, dtype));
    ASSERT_TRUE(prefetches_context_rows(shape, dtype));
    ParamSource source(p.init, p.seed);
    const std::unique_ptr<Scorer> scorer = find_scorer(p.scorer).make(source, shape);
    OneDnnContext ctx(1, dtype);
    const AttentionStep ours = run_attention_step(ctx, *scorer, shape, H, s, lengths, Impl::fused);
    expect_near_reference(ours, *scorer, p, lengths, s, H, test::tolerance_for(dtype));

    // Bit for bit what the same kernels give without any prefetch: the score rows, and the
    // streamed weighted sum of the stored rows (bf16: H rounded, nothing readable past them)
    // with the step's weights.
    std::vector<float> unprefetched(count(p.batch * p.src_len));
    test::compute_scores(*scorer, Impl::fused, shape, s.data(), unprefetched.data());
    std::vector<std::uint16_t> H_bf16(H.size());
    fused::to_bf16(H.data(), static_cast<std::int64_t>(H.size()), H_bf16.data());
    std::vector<float> context(count(p.batch * p.enc_dim));
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const std::int64_t len = lengths[count(b)], first = b * p.src_len * p.enc_dim;
      for (std::int64_t j = 0; j < len; ++j)
        EXPECT_EQ(ours.scores[count(b * p.src_len + j)], unprefetched[count(b * p.src_len + j)]) << b << " " << j;
      if (dtype == DType::bf16)
        fused::weighted_sum_rows_streamed(ours.weights.data() + b * p.src_len, H_bf16.data() + first, len, p.enc_dim,
                                          context.data() + b * p.enc_dim, 0);
      else
        fused::weighted_sum_rows_streamed(ours.weights.data() + b * p.src_len, H.data() + first, len, p.enc_dim,
                                          context.data() + b * p.enc_dim);
    }
    EXPECT_EQ(ours.context, context);
  }
}

INSTANTIATE_TEST_SUITE_P(AllScorers, FusedStep, ::testing::ValuesIn(all_scorer_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace attnbench
