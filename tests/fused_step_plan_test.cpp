// The fused step's plan and its dot paths: which algorithm dot and scaled_dot take (each
// checked against the double reference), how the examples split over threads, from what
// work a step goes parallel, and when a pass prefetches or alternates its order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/attention_step.hpp"
#include "core/fused_attend.hpp"
#include "core/fused_kernels.hpp"
#include "core/reference.hpp"
#include "test_support.hpp"
#include "variants/dot.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using test::count;
using test::all_scorer_names;
using test::near_reference;
using test::random_floats;
using test::widen;

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
  // x tanh_term_macs() + context: 102K with AVX-512's 4, 225K with fast_tanh's 10) cross the
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
