// measure_attention on hand-made weight rows whose metrics are known in closed form.
#include "driver/attention_metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "driver/schema.hpp"

namespace attnbench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A trace whose step t has the given weights (B, L) and scores (B, L); scores default
// to zeros when not given.
DecodeTrace make_trace(const std::vector<std::vector<double>>& weights,
                       const std::vector<std::vector<double>>& scores = {}) {
  DecodeTrace trace;
  for (std::size_t t = 0; t < weights.size(); ++t) {
    StepRecord step;
    step.weights = weights[t];
    step.scores = t < scores.size() ? scores[t] : std::vector<double>(weights[t].size(), 0.0);
    trace.steps.push_back(step);
  }
  return trace;
}

TEST(AttentionMetrics, UniformOverL) {
  const DecodeTrace trace = make_trace({{0.25, 0.25, 0.25, 0.25}});
  const std::vector<std::int64_t> lengths = {4};
  const AttentionMetrics m = measure_attention(trace, lengths, 1, 4);
  EXPECT_EQ(m.samples, 1);
  EXPECT_NEAR(m.entropy_mean, std::log(4.0), 1e-15);
  EXPECT_NEAR(m.entropy_norm_mean, 1.0, 1e-15);
  EXPECT_NEAR(m.support_mean, 4.0, 1e-14);
  EXPECT_DOUBLE_EQ(m.max_weight_mean, 0.25);
  EXPECT_DOUBLE_EQ(m.entropy_std, 0.0);
  EXPECT_DOUBLE_EQ(m.drift_mean, 0.0);  // a single step
  EXPECT_DOUBLE_EQ(m.mask_leak_max, 0.0);
}

TEST(AttentionMetrics, OneHot) {
  const DecodeTrace trace = make_trace({{0, 1, 0}});
  const std::vector<std::int64_t> lengths = {3};
  const AttentionMetrics m = measure_attention(trace, lengths, 1, 3);
  EXPECT_DOUBLE_EQ(m.entropy_mean, 0.0);  // 0 log 0 = 0
  EXPECT_DOUBLE_EQ(m.entropy_norm_mean, 0.0);
  EXPECT_DOUBLE_EQ(m.support_mean, 1.0);
  EXPECT_DOUBLE_EQ(m.max_weight_mean, 1.0);
  EXPECT_DOUBLE_EQ(m.jacobian_fro_mean, 0.0);  // saturated softmax has a zero Jacobian
}

TEST(AttentionMetrics, MaskedPositionsAreExcludedAndCarryNoMass) {
  // Example 0 is uniform over 4, example 1 uniform over its 2 valid positions.
  const DecodeTrace trace =
      make_trace({{0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0, 0}}, {{1, 2, 3, 4, 1, 3, -kInf, -kInf}});
  const std::vector<std::int64_t> lengths = {4, 2};
  const AttentionMetrics m = measure_attention(trace, lengths, 2, 4);
  EXPECT_EQ(m.samples, 2);
  EXPECT_NEAR(m.entropy_mean, (std::log(4.0) + std::log(2.0)) / 2, 1e-15);
  EXPECT_NEAR(m.entropy_std, std::log(2.0) / 2, 1e-15);  // population std of {ln 4, ln 2}
  EXPECT_NEAR(m.entropy_min, std::log(2.0), 1e-15);
  EXPECT_NEAR(m.entropy_max, std::log(4.0), 1e-15);
  EXPECT_NEAR(m.entropy_norm_mean, 1.0, 1e-15);
  EXPECT_NEAR(m.support_mean, 3.0, 1e-14);
  EXPECT_DOUBLE_EQ(m.max_weight_mean, 0.375);
  // Population std of {1,2,3,4} is sqrt(1.25), of {1,3} is 1; -inf is not a valid score.
  EXPECT_NEAR(m.score_std_mean, (std::sqrt(1.25) + 1.0) / 2, 1e-15);
  EXPECT_EQ(m.mask_leak_max, 0.0);
}

TEST(AttentionMetrics, LeakOntoPaddingIsReported) {
  const DecodeTrace trace = make_trace({{0.4, 0.4, 0.2, 0, 1, 0, 0, 0}, {0.5, 0.4, 0.05, 0.05, 1, 0, 0, 0}});
  const std::vector<std::int64_t> lengths = {2, 4};
  const AttentionMetrics m = measure_attention(trace, lengths, 2, 4);
  EXPECT_NEAR(m.mask_leak_max, 0.2, 1e-15);
}

TEST(AttentionMetrics, DriftIsZeroWhenWeightsRepeat) {
  const std::vector<double> row = {0.1, 0.2, 0.7, 0.5, 0.5, 0.0};
  const DecodeTrace trace = make_trace({row, row, row});
  const std::vector<std::int64_t> lengths = {3, 3};
  const AttentionMetrics m = measure_attention(trace, lengths, 2, 3);
  EXPECT_EQ(m.samples, 6);
  EXPECT_EQ(m.drift_mean, 0.0);
}

TEST(AttentionMetrics, DriftIsTotalVariationOverTwoSteps) {
  // 0.5 * (|0.1-0.7| + |0.3-0.2| + |0.6-0.1|) = 0.5 * 1.2 = 0.6.
  const DecodeTrace trace = make_trace({{0.7, 0.2, 0.1}, {0.1, 0.3, 0.6}});
  const std::vector<std::int64_t> lengths = {3};
  const AttentionMetrics m = measure_attention(trace, lengths, 1, 3);
  EXPECT_NEAR(m.drift_mean, 0.6, 1e-15);
}

TEST(AttentionMetrics, JacobianNormMatchesExplicitMatrix) {
  const std::vector<double> a = {0.5, 0.3, 0.2};
  double explicit_sq = 0.0;  // ||diag(a) - a a^T||_F^2 from the 3x3 matrix
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double J = (i == j ? a[i] : 0.0) - a[i] * a[j];
      explicit_sq += J * J;
    }
  double s2 = 0.0, s3 = 0.0;
  for (double w : a) {
    s2 += w * w;
    s3 += w * w * w;
  }
  ASSERT_NEAR(explicit_sq, s2 - 2 * s3 + s2 * s2, 1e-15);
  const std::vector<std::int64_t> lengths = {3};
  const AttentionMetrics m = measure_attention(make_trace({a}), lengths, 1, 3);
  EXPECT_NEAR(m.jacobian_fro_mean * m.jacobian_fro_mean, explicit_sq, 1e-15);
}

TEST(AttentionMetrics, LengthOneRowsAreSkippedInNormalizedEntropy) {
  // ln 1 = 0: the length-1 row is left out of entropy_norm_mean only.
  const DecodeTrace trace = make_trace({{1, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3}});
  const std::vector<std::int64_t> lengths = {1, 3};
  const AttentionMetrics m = measure_attention(trace, lengths, 2, 3);
  EXPECT_NEAR(m.entropy_norm_mean, 1.0, 1e-15);
  EXPECT_NEAR(m.entropy_mean, std::log(3.0) / 2, 1e-15);

  const std::vector<std::int64_t> one = {1};
  EXPECT_TRUE(std::isnan(measure_attention(make_trace({{1}}), one, 1, 1).entropy_norm_mean));
}

TEST(AttentionMetrics, RejectsShapesThatDoNotFit) {
  const DecodeTrace trace = make_trace({{0.5, 0.5}});
  const std::vector<std::int64_t> good = {2}, too_long = {3}, two = {2, 2};
  EXPECT_NO_THROW(measure_attention(trace, good, 1, 2));
  EXPECT_THROW(measure_attention(trace, too_long, 1, 2), std::invalid_argument);
  EXPECT_THROW(measure_attention(trace, two, 2, 2), std::invalid_argument);  // step has 2 values, not 4
}

TEST(AttentionMetrics, CellsFollowTheSchema) {
  const std::vector<std::int64_t> lengths = {2};
  const AttentionMetrics m = measure_attention(make_trace({{0.5, 0.5}, {0.5, 0.5}}), lengths, 1, 2);
  const std::vector<std::string> cells = metric_cells(m);
  ASSERT_EQ(cells.size(), schema::kEntropyValues.size());
  EXPECT_EQ(cells[0], "2");                   // samples
  EXPECT_EQ(cells[1], "0.693147181");         // entropy_mean = ln 2, %.9g
  EXPECT_EQ(cells[5], "1");                   // entropy_norm_mean
  EXPECT_EQ(cells[11], "0");                  // mask_leak_max
  EXPECT_EQ(cells.back(), "0");               // entropy_diff_f32 of an f32 row
}

TEST(EntropyDifference, MeanOverStepsAndExamplesOfValidPositions) {
  // Example 0 has length 2, example 1 length 1 (its padded position is ignored).
  // Step 0: bf16 uniform over 2 (ln 2) vs f32 one-hot (0); example 1 has entropy 0 in both.
  // Step 1: both one-hot for example 0; example 1 again 0 and 0.
  const DecodeTrace bf16 = make_trace({{0.5, 0.5, 1, 0}, {1, 0, 1, 0}});
  const DecodeTrace f32 = make_trace({{1, 0, 1, 0}, {0, 1, 1, 0}});
  const std::vector<std::int64_t> lengths = {2, 1};
  EXPECT_NEAR(mean_entropy_difference(bf16, f32, lengths, 2, 2), std::log(2.0) / 4, 1e-15);
  EXPECT_NEAR(mean_entropy_difference(f32, bf16, lengths, 2, 2), -std::log(2.0) / 4, 1e-15);
  EXPECT_EQ(mean_entropy_difference(bf16, bf16, lengths, 2, 2), 0.0);
}

TEST(EntropyDifference, SignFollowsTheFlatterDistribution) {
  const std::vector<std::int64_t> lengths = {3};
  const DecodeTrace flatter = make_trace({{0.3, 0.3, 0.4}});
  const DecodeTrace peaked = make_trace({{0.1, 0.1, 0.8}});
  const double h_flat = -(0.6 * std::log(0.3) + 0.4 * std::log(0.4));
  const double h_peak = -(0.2 * std::log(0.1) + 0.8 * std::log(0.8));
  EXPECT_NEAR(mean_entropy_difference(flatter, peaked, lengths, 1, 3), h_flat - h_peak, 1e-15);
  EXPECT_GT(mean_entropy_difference(flatter, peaked, lengths, 1, 3), 0.0);
}

TEST(EntropyDifference, RejectsTracesThatDoNotMatch) {
  const std::vector<std::int64_t> lengths = {2};
  const DecodeTrace one_step = make_trace({{0.5, 0.5}});
  const DecodeTrace two_steps = make_trace({{0.5, 0.5}, {0.5, 0.5}});
  const DecodeTrace wider = make_trace({{0.5, 0.5, 0.0}});
  EXPECT_THROW(mean_entropy_difference(one_step, two_steps, lengths, 1, 2), std::invalid_argument);
  EXPECT_THROW(mean_entropy_difference(one_step, wider, lengths, 1, 2), std::invalid_argument);
  EXPECT_TRUE(std::isnan(mean_entropy_difference(make_trace({}), make_trace({}), lengths, 1, 2)));
}

TEST(EntropyDifference, WrittenAsTheLastCell) {
  AttentionMetrics m;
  m.entropy_diff_f32 = -0.00125;
  EXPECT_EQ(schema::kEntropyValues.back(), "entropy_diff_f32");
  EXPECT_EQ(metric_cells(m).back(), "-0.00125");
}

}  // namespace
}  // namespace attnbench
