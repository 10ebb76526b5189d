#include <gtest/gtest.h>

#include <map>
#include <string>

#include "driver/cost_model.hpp"
#include "test_support.hpp"

namespace attnbench {
namespace {

// B 2, L 3, E 4, D 5, A 6: small enough to count by hand.
Problem small(const char* scorer, Impl impl = Impl::onednn) {
  Problem p;
  p.scorer = scorer;
  p.batch = 2;
  p.src_len = 3;
  p.enc_dim = 4;
  p.dec_dim = 5;
  p.attn_dim = 6;
  p.impl = impl;
  return p;
}

TEST(CostModel, DotScoreIsTheQueryProjectionPlusOneDotPerPosition) {
  const StageCost c = stage_cost(small("dot"), "score");
  // q = W s: 2 x 2*5*6 flops; q . k_j: 2 x 2*3*6.
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 2 * 5 * 6 + 2.0 * 2 * 3 * 6);
  // W, s and q once; K (B, L, A) and e (B, L) once.
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (5 * 6 + 2 * 5 + 2 * 6) + 4.0 * (2 * 3 * 6 + 2 * 3));
}

TEST(CostModel, OneDnnAdditiveWritesAndRereadsTheHiddenTensor) {
  const StageCost c = stage_cost(small("additive"), "score");
  const double query_flops = 2.0 * 2 * 5 * 6, query_bytes = 4.0 * (5 * 6 + 2 * 5 + 2 * 6);
  const double hidden = 2 * 3 * 6;
  // add + tanh over (B, L, A), then v: 2 flops per element.
  EXPECT_DOUBLE_EQ(c.flops, query_flops + 2 * hidden + 2 * hidden);
  // K read, hidden written, then hidden, v read and e written by the v product.
  EXPECT_DOUBLE_EQ(c.bytes, query_bytes + 4 * 2 * hidden + 4.0 * (6 + hidden + 2 * 3));
}

TEST(CostModel, FusedAdditiveHasTheSameFlopsButReadsKeysOnce) {
  const StageCost onednn = stage_cost(small("additive"), "score");
  const StageCost fused = stage_cost(small("additive", Impl::fused), "score");
  EXPECT_DOUBLE_EQ(fused.flops, onednn.flops);
  const double query_bytes = 4.0 * (5 * 6 + 2 * 5 + 2 * 6);
  EXPECT_DOUBLE_EQ(fused.bytes, query_bytes + 4.0 * (2 * 3 * 6 + 6 + 2 * 3));
  // oneDNN's additive_linear drops the tanh: one flop fewer per element.
  EXPECT_DOUBLE_EQ(stage_cost(small("additive_linear"), "score").flops, onednn.flops - 2 * 3 * 6);
}

TEST(CostModel, FusedDotFromAnnotationsReadsHOncePerStep) {
  // B2 L3 E4 D5 A6 scores from H (U^T W is 20 floats against W and the keys' 66).
  const Problem p = small("scaled_dot", Impl::fused);
  // q = (U^T W / sqrt(A)) s: 2 x 2*5*4 flops; q . h_j: 2 x 2*3*4; no keys stage.
  const StageCost score = stage_cost(p, "score");
  EXPECT_DOUBLE_EQ(score.flops, 2.0 * 2 * 5 * 4 + 2.0 * 2 * 3 * 4);
  EXPECT_DOUBLE_EQ(score.bytes, 4.0 * (5 * 4 + 2 * 5 + 2 * 4) + 4.0 * (2 * 3 * 4 + 2 * 3));
  EXPECT_DOUBLE_EQ(stage_cost(p, "keys").flops, 0.0);
  // The step: score and attend, H (B, L, E) counted once.
  const StageCost step = stage_cost(p, "step"), attend = stage_cost(p, "attend");
  EXPECT_DOUBLE_EQ(step.flops, score.flops + attend.flops);
  EXPECT_DOUBLE_EQ(step.bytes, score.bytes + attend.bytes - 4.0 * 2 * 3 * 4);
}

TEST(CostModel, FusedLinearAdditiveStepIsTheQueryScoreAndCopies) {
  const Problem p = small("additive_linear", Impl::fused);
  // (W^T v) . s per example: 2 x 2*5 flops, W^T v (5), s (2*5) read, 2 written; + BL adds,
  // key scores read and e written.
  const StageCost score = stage_cost(p, "score");
  EXPECT_DOUBLE_EQ(score.flops, 2.0 * 2 * 5 + 2 * 3);
  EXPECT_DOUBLE_EQ(score.bytes, 4.0 * (5 + 2 * 5 + 2) + 4.0 * (2 * 3 + 2 * 3));
  // The step adds the copies of the per-sequence alpha (B, L) and c (B, E).
  const StageCost step = stage_cost(p, "step");
  EXPECT_DOUBLE_EQ(step.flops, score.flops);
  EXPECT_DOUBLE_EQ(step.bytes, score.bytes + 4.0 * (2 * 3 + 2 * 4));
  // Keys: (U^T v) . h_j for every position.
  EXPECT_DOUBLE_EQ(stage_cost(p, "keys").flops, 2.0 * 2 * 3 * 4);
}

TEST(CostModel, EveryFusedBf16StepStreamsItsRowsAtTwoBytes) {
  // B2 L3 E4 D5 A6: the bytes the bf16 fused step saves are 2 per element of the rows it
  // streams: its keys (B, L, A) or (B, L, D) for general, and H (B, L, E) for the context,
  // read once when dot scores from it; additive_linear's step streams neither (its context
  // is per sequence) and location has no keys.
  const double BLA = 2 * 3 * 6, BLD = 2 * 3 * 5, BLE = 2 * 3 * 4;
  const std::map<std::string, double> saved = {
      {"additive", 2 * (BLA + BLE)}, {"additive_linear", 0.0}, {"dot", 2 * BLE}, {"scaled_dot", 2 * BLE},
      {"general", 2 * (BLD + BLE)},  {"location", 2 * BLE},    {"mlp", 2 * (BLA + BLE)}};
  ASSERT_EQ(saved.size(), test::all_scorer_names().size());
  for (const std::string& scorer : test::all_scorer_names()) {
    SCOPED_TRACE(scorer);
    Problem p = small(scorer.c_str(), Impl::fused);
    const StageCost f32 = stage_cost(p, "step");
    p.dtype = DType::bf16;
    const StageCost bf16 = stage_cost(p, "step");
    EXPECT_DOUBLE_EQ(bf16.flops, f32.flops);
    EXPECT_DOUBLE_EQ(f32.bytes - bf16.bytes, saved.at(scorer));
    // oneDNN's bf16 converts per call: its compulsory f32 traffic is unchanged.
    Problem o = small(scorer.c_str());
    const double onednn_bytes = stage_cost(o, "step").bytes;
    o.dtype = DType::bf16;
    EXPECT_DOUBLE_EQ(stage_cost(o, "step").bytes, onednn_bytes);
  }
}

TEST(CostModel, LocationHasNoKeysAndScoresWithOneProjectionToSrcLen) {
  for (Impl impl : {Impl::onednn, Impl::fused}) {
    const StageCost keys = stage_cost(small("location", impl), "keys");
    EXPECT_DOUBLE_EQ(keys.flops, 0.0);
    EXPECT_DOUBLE_EQ(keys.bytes, 0.0);
    const StageCost score = stage_cost(small("location", impl), "score");
    // W_a s: (B 2, D 5) x (D 5, L 3).
    EXPECT_DOUBLE_EQ(score.flops, 2.0 * 2 * 5 * 3);
    EXPECT_DOUBLE_EQ(score.bytes, 4.0 * (5 * 3 + 2 * 5 + 2 * 3));
  }
}

TEST(CostModel, MlpIsAdditivePlusTheQueryBias) {
  for (Impl impl : {Impl::onednn, Impl::fused}) {
    const StageCost mlp = stage_cost(small("mlp", impl), "score");
    const StageCost additive = stage_cost(small("additive", impl), "score");
    EXPECT_DOUBLE_EQ(mlp.flops, additive.flops + 2 * 6);  // + b on (B 2, A 6)
    EXPECT_DOUBLE_EQ(mlp.bytes, additive.bytes + 4.0 * 6);  // b read once
    EXPECT_DOUBLE_EQ(stage_cost(small("mlp", impl), "keys").flops, stage_cost(small("additive", impl), "keys").flops);
  }
}

TEST(CostModel, UnknownScorerThrows) { EXPECT_THROW(stage_cost(small("nope"), "score"), std::invalid_argument); }

TEST(CostModel, EveryOneDnnStepIsScorePlusAttend) {
  for (const std::string& scorer : test::all_scorer_names()) {
    SCOPED_TRACE(scorer);
    const Problem p = small(scorer.c_str());
    const StageCost step = stage_cost(p, "step"), score = stage_cost(p, "score"), attend = stage_cost(p, "attend");
    EXPECT_DOUBLE_EQ(step.flops, score.flops + attend.flops);
    EXPECT_DOUBLE_EQ(step.bytes, score.bytes + attend.bytes);
  }
}

TEST(CostModel, StepIsScorePlusAttendAndDecodeCountsEveryStep) {
  const Problem p = small("general");
  const StageCost step = stage_cost(p, "step"), score = stage_cost(p, "score"), attend = stage_cost(p, "attend");
  EXPECT_DOUBLE_EQ(step.flops, score.flops + attend.flops);
  EXPECT_DOUBLE_EQ(step.bytes, score.bytes + attend.bytes);
  const StageCost decode = stage_cost(p, "decode");
  const double per_step = step.flops + stage_cost(p, "cell").flops + stage_cost(p, "output").flops;
  EXPECT_DOUBLE_EQ(decode.flops, stage_cost(p, "keys").flops + static_cast<double>(p.tgt_len) * per_step);
  EXPECT_THROW(stage_cost(p, "softmax"), std::invalid_argument);
}

}  // namespace
}  // namespace attnbench
