// The fused attention step (Impl::fused) as a whole: against the oneDNN path, one pass
// against the separate stages, parallel against serial, and the oneDNN query path of
// large shapes against the double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
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
#include "variants/dot.hpp"
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

// --- dot and scaled_dot: from the keys or from H with the folded query -------------------------

TEST(FusedDotAlgorithm, WorkOfEachPathAndTheChoice) {
  // Paper sizes B80 L50 E2000 D1000 A1000: the keys path reads W and the keys (1M + 4M
  // floats, 80M + 4M multiply-adds), the state keys only theirs (4M floats, 4M
  // multiply-adds), the folded query U^T W (2M floats) for 160M + 8M multiply-adds: at 16
  // multiply-adds per float the state keys win, then the keys.
  const ScorerShape paper{80, 50, 2000, 1000, 1000}, lesson{2, 10, 16, 20, 32};
  const DotStepWork keys = dot_step_work(paper, DotPath::keys), state = dot_step_work(paper, DotPath::state_keys),
                    folded = dot_step_work(paper, DotPath::annotations);
  EXPECT_DOUBLE_EQ(keys.floats, 1e6 + 4e6);
  EXPECT_DOUBLE_EQ(keys.macs, 80e6 + 4e6);
  EXPECT_DOUBLE_EQ(state.floats, 4e6);
  EXPECT_DOUBLE_EQ(state.macs, 4e6);
  EXPECT_DOUBLE_EQ(folded.floats, 2e6);
  EXPECT_DOUBLE_EQ(folded.macs, 160e6 + 8e6);
  EXPECT_DOUBLE_EQ(keys.cost(), 5e6 + 84e6 / kMacsPerFloatRead);  // 48 MB of keys and H: from DRAM
  EXPECT_LT(keys.cost(), folded.cost());
  EXPECT_EQ(fused_dot_path(paper), DotPath::state_keys);
  // The lesson: keys 640 + 640 floats, state keys 400 floats and 400 multiply-adds (500 at 4
  // a float), folded 320 floats and 640 + 320 multiply-adds (560).
  EXPECT_DOUBLE_EQ(dot_step_work(lesson, DotPath::keys).floats, 1280);
  EXPECT_DOUBLE_EQ(dot_step_work(lesson, DotPath::state_keys).cost(), 500);
  EXPECT_DOUBLE_EQ(dot_step_work(lesson, DotPath::annotations).cost(), 560);
  EXPECT_EQ(fused_dot_path(lesson), DotPath::state_keys);
  // The mid size B32 L50 E512 D256 A256: keys and H 4.9 MB, from the L3 at 4 multiply-adds
  // a float: keys 475K floats + 2.5M / 4, state keys 410K + 410K / 4, folded 131K + 5.0M / 4.
  const ScorerShape mid{32, 50, 512, 256, 256};
  EXPECT_DOUBLE_EQ(dot_step_work(mid, DotPath::keys).macs_per_float, kMacsPerCachedFloatRead);
  EXPECT_DOUBLE_EQ(dot_step_work(mid, DotPath::keys).cost(),
                   256.0 * 256 + 32 * 50 * 256 + (32.0 * 256 * 256 + 32 * 50 * 256) / 4);
  EXPECT_DOUBLE_EQ(dot_step_work(mid, DotPath::state_keys).cost(), 32.0 * 50 * 256 * 1.25);
  EXPECT_EQ(fused_dot_path(mid), DotPath::state_keys);
  // D > A: state keys would cost more a sequence than U h_j, so they are never taken, even
  // where their step would be cheapest (B8 L20 E64 D48 A40: 7.7K floats and multiply-adds
  // against the keys' 8.3K floats and 21.8K multiply-adds).
  const ScorerShape wide_state{8, 20, 256, 48, 40};
  EXPECT_LT(dot_step_work(wide_state, DotPath::state_keys).cost(), dot_step_work(wide_state, DotPath::keys).cost());
  EXPECT_EQ(fused_dot_path(wide_state), DotPath::keys);
}

TEST(FusedDotAlgorithm, CachedOrNotByTheBytesEachPathStreams) {
  EXPECT_DOUBLE_EQ(macs_per_float_read(16.0 * 1024 * 1024), kMacsPerCachedFloatRead);
  EXPECT_DOUBLE_EQ(macs_per_float_read(16.0 * 1024 * 1024 + 4), kMacsPerFloatRead);
  // B64 L64 E1024 A512: H alone is 16 MiB (the folded path, cached), the keys and H 24 MiB (DRAM).
  const ScorerShape shape{64, 64, 1024, 8, 512};
  EXPECT_DOUBLE_EQ(dot_step_work(shape, DotPath::annotations).macs_per_float, kMacsPerCachedFloatRead);
  EXPECT_DOUBLE_EQ(dot_step_work(shape, DotPath::keys).macs_per_float, kMacsPerFloatRead);
  // H and the state keys (8 wide): 16.1 MiB, just past the L3 share.
  EXPECT_DOUBLE_EQ(dot_step_work(shape, DotPath::state_keys).macs_per_float, kMacsPerFloatRead);
  const ScorerShape paper{80, 50, 2000, 1000, 1000};  // 32 MB of H
  EXPECT_DOUBLE_EQ(dot_step_work(paper, DotPath::annotations).macs_per_float, kMacsPerFloatRead);
}

TEST(FusedStepSplit, RangesCoverEveryExampleOnceWithEdgesNearTheirShare) {
  std::mt19937 random(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int examples = 1 + static_cast<int>(random() % 40);
    std::vector<std::int64_t> prefix = {0};
    std::int64_t longest = 0;
    for (int b = 0; b < examples; ++b) {
      const std::int64_t length = static_cast<std::int64_t>(random() % 60);  // zeros included
      longest = std::max(longest, length);
      prefix.push_back(prefix.back() + length);
    }
    for (int parts = 1; parts <= 6; ++parts) {
      SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(parts) + " parts");
      std::int64_t previous = 0;
      for (int part = 0; part <= parts; ++part) {
        const std::int64_t first = first_example_of_part(prefix, part, parts);
        ASSERT_GE(first, previous);  // ranges in order, none overlapping
        previous = first;
        if (part == 0) {
          ASSERT_EQ(first, 0);
        }
        if (part == parts) {
          ASSERT_EQ(first, examples);
        }
        if (part > 0 && part < parts) {  // the nearest edge is within half the longest length of the ideal
          const double ideal = static_cast<double>(prefix.back()) * part / parts;
          ASSERT_LE(std::abs(static_cast<double>(prefix[static_cast<std::size_t>(first)]) - ideal),
                    static_cast<double>(longest) / 2 + 1e-9);
        }
      }
    }
  }
}

class FusedDotPaths : public ::testing::TestWithParam<std::string> {};

TEST_P(FusedDotPaths, EveryPathMatchesReferenceMaskedOnOneAndTwoThreads) {
  // Wide E and D with a narrow A and few positions: the keys are cheaper than U^T W (and D > A
  // rules out the state keys); with E < A the folded query is cheaper in floats and
  // multiply-adds; with a narrow D the state keys beat both.
  const ScorerShape from_keys{3, 5, 64, 48, 4}, from_annotations{3, 17, 17, 33, 34}, from_state_keys{3, 5, 16, 8, 24};
  ASSERT_EQ(fused_dot_path(from_keys), DotPath::keys);
  ASSERT_EQ(fused_dot_path(from_annotations), DotPath::annotations);
  ASSERT_EQ(fused_dot_path(from_state_keys), DotPath::state_keys);
  for (const ScorerShape& shape : {from_keys, from_annotations, from_state_keys})
    for (int threads : {1, 2}) {
      SCOPED_TRACE("E " + std::to_string(shape.enc_dim) + ", threads " + std::to_string(threads));
      const std::vector<std::int64_t> lengths = {shape.src_len, 2, shape.src_len - 1};
      ParamSource source(InitKind::torch, 7);
      const std::unique_ptr<Scorer> scorer = find_scorer(GetParam()).make(source, shape);
      const std::vector<float> H = random_floats(count(shape.batch * shape.src_len * shape.enc_dim), 15);
      const std::vector<float> s = random_floats(count(shape.batch * shape.dec_dim), 16);
      OneDnnContext ctx(threads);
      const AttentionStep ours = run_attention_step(ctx, *scorer, shape, H, s, lengths, Impl::fused);
      std::vector<double> e = scorer->reference_score(widen(s), widen(H));
      const std::vector<double> alpha = ref::masked_softmax(e, shape.batch, shape.src_len, lengths);
      for (std::int64_t b = 0; b < shape.batch; ++b)
        for (std::int64_t j = lengths[count(b)]; j < shape.src_len; ++j)
          e[count(b * shape.src_len + j)] = -std::numeric_limits<double>::infinity();
      EXPECT_TRUE(near_reference("scores", ours.scores, e));
      EXPECT_TRUE(near_reference("weights", ours.weights, alpha));
      EXPECT_TRUE(near_reference("context", ours.context,
                                 ref::context(alpha, widen(H), shape.batch, shape.src_len, shape.enc_dim)));
    }
}

INSTANTIATE_TEST_SUITE_P(DotScorers, FusedDotPaths, ::testing::Values("dot", "scaled_dot"),
                         [](const auto& info) { return info.param; });

TEST(FusedStepThreshold, LessonSizesRunSerialBigBatchesParallel) {
  const ScorerShape lesson{2, 10, 16, 20, 32}, bahdanau{80, 50, 2000, 1000, 1000};
  const auto parallel = [](int threads, const ScorerShape& shape, const std::string& scorer) {
    ParamSource source(InitKind::fast, 1);
    const double work = find_scorer(scorer).make(source, shape)->fused_score_work(shape);
    return FusedAttend(threads, shape, std::vector<std::int64_t>(static_cast<std::size_t>(shape.batch), shape.src_len),
                       DType::f32, work)
        .parallel();
  };
  for (const std::string& scorer : all_scorer_names()) {
    SCOPED_TRACE(scorer);
    EXPECT_FALSE(parallel(2, lesson, scorer));
    EXPECT_TRUE(parallel(2, bahdanau, scorer));
    EXPECT_FALSE(parallel(1, bahdanau, scorer));
  }
  // The lesson's step: 2 x 10 positions x 16 for the context, plus per scorer its rows.
  EXPECT_EQ(fused_step_work(lesson, 0.0), 2 * 10 * 16);
}

TEST(FusedStepSplit, ContiguousRangesWithNearlyEqualLengthSums) {
  // Lengths {10, 7, 4}: prefix {0, 10, 17, 21}; the halves' ideal edge is 10.5, nearest 10.
  const std::vector<std::int64_t> falling = {0, 10, 17, 21};
  EXPECT_EQ(first_example_of_part(falling, 0, 2), 0);
  EXPECT_EQ(first_example_of_part(falling, 1, 2), 1);
  EXPECT_EQ(first_example_of_part(falling, 2, 2), 3);
  // Three parts of 7 each: the edges 7 and 14 are nearest to the prefixes 10 and 17.
  EXPECT_EQ(first_example_of_part(falling, 1, 3), 1);
  EXPECT_EQ(first_example_of_part(falling, 2, 3), 2);
  // 32 equal lengths in 2 parts: 16 and 16; more parts than examples leave some ranges empty.
  std::vector<std::int64_t> equal(33);
  for (std::size_t b = 0; b < equal.size(); ++b) equal[b] = 50 * static_cast<std::int64_t>(b);
  EXPECT_EQ(first_example_of_part(equal, 1, 2), 16);
  const std::vector<std::int64_t> one = {0, 5};
  EXPECT_EQ(first_example_of_part(one, 1, 4), 0);
  EXPECT_EQ(first_example_of_part(one, 2, 4), 1);
  EXPECT_EQ(first_example_of_part(one, 4, 4), 1);
}

TEST(FusedStepThreshold, EachScorerFromItsOwnCost) {
  // B4 L40 E48 D32 A64: 160 positions, 7.7K context multiply-adds. Each scorer's rows:
  // tanh terms weigh fused::tanh_term_macs() each, dot terms one; dot and scaled_dot score from H here
  // (U^T W is 1.5K floats against the keys' 10K), so their rows are E wide.
  const ScorerShape shape{4, 40, 48, 32, 64};
  const double positions = 4 * 40;
  const std::map<std::string, double> expected = {
      {"additive", fused::tanh_term_macs() * positions * 64}, {"additive_linear", positions},  // one add per position
      {"dot", positions * 48},                  {"scaled_dot", positions * 48},
      {"general", positions * 32},              {"location", positions},  // one copy per position
      {"mlp", fused::tanh_term_macs() * positions * 64}};
  ASSERT_EQ(fused_dot_path(shape), DotPath::annotations);
  ASSERT_EQ(expected.size(), all_scorer_names().size());
  ParamSource source(InitKind::fast, 1);
  for (const std::string& scorer : all_scorer_names()) {
    SCOPED_TRACE(scorer);
    ASSERT_EQ(expected.count(scorer), 1u);
    EXPECT_DOUBLE_EQ(find_scorer(scorer).make(source, shape)->fused_score_work(shape), expected.at(scorer));
  }
  // B8 L40 E=D=A=64: 320 positions, 20,480 context multiply-adds. The tanh scorers (tanh terms
  // x tanh_term_macs() + context: 102K with AVX-512's 4, 225K with the portable 10) cross the
  // threshold, the dot-like ones (41K) and additive_linear and location (21K) do not.
  const ScorerShape square{8, 40, 64, 64, 64};
  const double additive = find_scorer("additive").make(source, square)->fused_score_work(square);
  const double general = find_scorer("general").make(source, square)->fused_score_work(square);
  ASSERT_GE(fused_step_work(square, additive), kParallelStepWork);
  ASSERT_LT(fused_step_work(square, general), kParallelStepWork);
  const std::vector<std::int64_t> lengths(8, 40);
  const std::map<std::string, bool> parallel = {{"additive", true},         {"mlp", true},
                                                {"additive_linear", false}, {"dot", false},
                                                {"scaled_dot", false},      {"general", false},
                                                {"location", false}};
  ASSERT_EQ(parallel.size(), all_scorer_names().size());
  for (const auto& [scorer, expected] : parallel) {
    SCOPED_TRACE(scorer);
    const double work = find_scorer(scorer).make(source, square)->fused_score_work(square);
    EXPECT_EQ(FusedAttend(2, square, lengths, DType::f32, work).parallel(), expected) << work;
    EXPECT_EQ(fused_step_threads(2, square, work), expected ? 2 : 1);  // the query's threads too
    EXPECT_EQ(fused_step_threads(1, square, work), 1);
  }
}

TEST(FusedStepPrefetch, ContextRowsFromTwoMiBOfStoredAnnotationsDramStreamingFromEight) {
  // The mid size's 3.3 MB of f32 annotations: the score pass prefetches the context's rows,
  // the bf16 context pass does not stream; in bf16 (1.6 MB) neither; at the paper's sizes
  // (32 MB, 16 MB in bf16) both; the lesson's 1.3 KB neither.
  const ScorerShape mid{32, 50, 512, 256, 256}, paper{80, 50, 2000, 1000, 1000}, lesson{2, 10, 16, 20, 32};
  EXPECT_TRUE(prefetches_context_rows(mid, DType::f32));
  EXPECT_FALSE(streams_annotations(mid, DType::f32));
  EXPECT_FALSE(prefetches_context_rows(mid, DType::bf16));
  for (const DType dtype : {DType::f32, DType::bf16}) {
    EXPECT_TRUE(prefetches_context_rows(paper, dtype));
    EXPECT_TRUE(streams_annotations(paper, dtype));
    EXPECT_FALSE(prefetches_context_rows(lesson, dtype));
  }
  // Exactly at the threshold: B1 L512 E1024 in f32 is 2 MiB.
  EXPECT_TRUE(prefetches_context_rows({1, 512, 1024, 16, 16}, DType::f32));
  EXPECT_FALSE(prefetches_context_rows({1, 511, 1024, 16, 16}, DType::f32));
}

TEST(FusedStepOrder, AlternatesWhereNeitherAnnotationsNorKeysStreamFromDram) {
  // The mid size (3.3 MB of annotations in f32) and the lesson alternate; the paper's sizes
  // (32 MB, 16 MB in bf16) do not; nor do keys of 13 MB beside annotations of 410 KB. A
  // step that does not alternate keeps going forwards.
  const ScorerShape mid{32, 50, 512, 256, 256}, paper{80, 50, 2000, 1000, 1000}, lesson{2, 10, 16, 20, 32};
  for (const DType dtype : {DType::f32, DType::bf16}) {
    EXPECT_TRUE(alternates_example_order(mid, dtype));
    EXPECT_TRUE(alternates_example_order(lesson, dtype));
    EXPECT_FALSE(alternates_example_order(paper, dtype));
  }
  EXPECT_FALSE(alternates_example_order({32, 50, 64, 256, 2048}, DType::f32));
  EXPECT_TRUE(alternates_example_order({32, 50, 64, 256, 2048}, DType::bf16));  // 6.6 MB
  // Exactly at kStreamedBytes: B1 L2048 E1024 in f32 is 8 MiB.
  EXPECT_FALSE(alternates_example_order({1, 2048, 1024, 16, 16}, DType::f32));
  EXPECT_TRUE(alternates_example_order({1, 2047, 1024, 16, 16}, DType::f32));
  EXPECT_TRUE(streams_keys({32, 50, 64, 256, 2048}, DType::f32));
  EXPECT_FALSE(streams_annotations({32, 50, 64, 256, 2048}, DType::f32));
  EXPECT_FALSE(streams_keys(mid, DType::f32));
  const ScorerShape keys_stream{4, 64, 16, 16, 8192};  // keys of 8 MiB in f32, 4 KB of state each
  ASSERT_FALSE(alternates_example_order(keys_stream, DType::f32));
  ParamSource source(InitKind::fast, 1);
  const std::unique_ptr<Scorer> scorer = find_scorer("additive").make(source, keys_stream);
  OneDnnContext ctx(1);
  scorer->build(ctx, Impl::fused);
  const std::vector<float> H = random_floats(count(4 * 64 * 16), 3), s = random_floats(count(4 * 16), 4);
  scorer->prepare(H.data());
  FusedAttend attend(1, keys_stream, std::vector<std::int64_t>(4, 64), DType::f32, scorer->fused_score_work(keys_stream));
  attend.prepare(*scorer, H.data());
  std::vector<float> e(count(4 * 64)), alpha(e.size()), c(count(4 * 16));
  for (int step = 0; step < 2; ++step) {
    attend.step(*scorer, s.data(), H.data(), e.data(), alpha.data(), c.data());
    EXPECT_FALSE(attend.next_pass_backwards()) << "step " << step;
  }
}

TEST(FusedStepThreshold, StaticWeightsGoParallelOnlyForTheirCopies) {
  // additive_linear at the mid size (B32 L50 E512): the context pass (819K multiply-adds) would
  // go parallel, but once prepare() has its weights and context a step scores 1.6K positions
  // and copies 32 x (50 + 512) floats: serial. At 10x the batch and E 4096 the copies pay.
  ParamSource source(InitKind::fast, 1);
  const auto attend = [&](const ScorerShape& shape) {
    const double work = find_scorer("additive_linear").make(source, shape)->fused_score_work(shape);
    return FusedAttend(2, shape, std::vector<std::int64_t>(static_cast<std::size_t>(shape.batch), shape.src_len),
                       DType::f32, work);
  };
  const FusedAttend mid = attend({32, 50, 512, 256, 256});
  EXPECT_TRUE(mid.parallel());
  EXPECT_FALSE(mid.parallel_when_static());
  EXPECT_TRUE(attend({320, 50, 4096, 256, 256}).parallel_when_static());
}

}  // namespace
}  // namespace attnbench
