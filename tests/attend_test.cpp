// Attend (masked softmax + context on oneDNN) against values computed here from its inputs.
#include "core/attend.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/onednn_context.hpp"
#include "test_support.hpp"

namespace attnbench {
namespace {

using test::near_reference;
using test::random_floats;

constexpr double kInf = std::numeric_limits<double>::infinity();

// softmax over the first lengths[b] entries of each row, 0 elsewhere, in double.
std::vector<double> expected_softmax(const std::vector<float>& e, std::int64_t batch, std::int64_t src_len,
                                     const std::vector<std::int64_t>& lengths) {
  std::vector<double> alpha(e.size(), 0.0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto n = lengths[static_cast<std::size_t>(b)];
    const auto row = [&](std::int64_t j) { return static_cast<double>(e[static_cast<std::size_t>(b * src_len + j)]); };
    double top = -kInf, sum = 0.0;
    for (std::int64_t j = 0; j < n; ++j) top = std::max(top, row(j));
    for (std::int64_t j = 0; j < n; ++j) sum += std::exp(row(j) - top);
    for (std::int64_t j = 0; j < n; ++j)
      alpha[static_cast<std::size_t>(b * src_len + j)] = std::exp(row(j) - top) / sum;
  }
  return alpha;
}

// c[b, k] = sum_j alpha[b, j] H[b, j, k] in double.
std::vector<double> expected_context(const std::vector<float>& alpha, const std::vector<float>& H, std::int64_t batch,
                                     std::int64_t src_len, std::int64_t enc_dim) {
  std::vector<double> c(static_cast<std::size_t>(batch * enc_dim), 0.0);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t j = 0; j < src_len; ++j)
      for (std::int64_t k = 0; k < enc_dim; ++k)
        c[static_cast<std::size_t>(b * enc_dim + k)] +=
            static_cast<double>(alpha[static_cast<std::size_t>(b * src_len + j)]) *
            H[static_cast<std::size_t>((b * src_len + j) * enc_dim + k)];
  return c;
}

struct Softmaxed {
  std::vector<float> scores;   // the logits after mask()
  std::vector<float> weights;  // softmax() of the logits as given
};

// Runs softmax() on `logits` as given, then mask() on them.
Softmaxed run_softmax(std::int64_t batch, std::int64_t src_len, const std::vector<std::int64_t>& lengths,
                      std::vector<float> logits, int threads = 1) {
  OneDnnContext ctx(threads);
  Attend attend(ctx, batch, src_len, 4, lengths);
  std::vector<float> weights(logits.size(), -1.f);
  const std::vector<float> given = logits;
  attend.softmax(logits.data(), weights.data());
  EXPECT_EQ(logits, given) << "softmax() changed its input";
  attend.mask(logits.data());
  return {std::move(logits), std::move(weights)};
}

TEST(Attend, MaskedPositionsGetMinusInfScoreAndExactlyZeroWeight) {
  const std::int64_t B = 4, L = 6;
  const std::vector<std::int64_t> lengths = {6, 4, 1, 3};
  // Padded logits are large and finite: softmax() must mask them itself.
  std::vector<float> logits = random_floats(B * L, 1, -5.f, 5.f);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = lengths[static_cast<std::size_t>(b)]; j < L; ++j)
      logits[static_cast<std::size_t>(b * L + j)] = 50.f;
  const Softmaxed out = run_softmax(B, L, lengths, logits);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < L; ++j) {
      const auto i = static_cast<std::size_t>(b * L + j);
      if (j >= lengths[static_cast<std::size_t>(b)]) {
        EXPECT_EQ(out.scores[i], -std::numeric_limits<float>::infinity()) << "b " << b << " j " << j;
        EXPECT_EQ(out.weights[i], 0.0f) << "b " << b << " j " << j;
      } else {
        EXPECT_EQ(out.scores[i], logits[i]) << "mask() changed a valid score: b " << b << " j " << j;
        EXPECT_GT(out.weights[i], 0.0f) << "b " << b << " j " << j;
      }
    }
  EXPECT_TRUE(near_reference("weights", out.weights, expected_softmax(logits, B, L, lengths)));
}

TEST(Attend, NoPaddingLeavesScoresUntouched) {
  const std::int64_t B = 3, L = 5;
  const std::vector<float> scores = random_floats(B * L, 2);
  const Softmaxed out = run_softmax(B, L, {5, 5, 5}, scores);
  EXPECT_EQ(out.scores, scores);
}

TEST(Attend, RowsSumToOne) {
  const std::int64_t B = 5, L = 33;
  const std::vector<std::int64_t> lengths = {33, 17, 9, 2, 1};
  for (float spread : {0.1f, 3.f, 30.f}) {
    const Softmaxed out = run_softmax(B, L, lengths, random_floats(B * L, 3, -spread, spread));
    for (std::int64_t b = 0; b < B; ++b) {
      double sum = 0.0;
      for (std::int64_t j = 0; j < L; ++j) sum += out.weights[static_cast<std::size_t>(b * L + j)];
      EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << b << ", spread " << spread;
    }
  }
}

TEST(Attend, UniformScoresGiveUniformWeights) {
  const std::int64_t B = 3, L = 7;
  const std::vector<std::int64_t> lengths = {7, 4, 1};
  const Softmaxed out = run_softmax(B, L, lengths, std::vector<float>(B * L, 2.5f));
  for (std::int64_t b = 0; b < B; ++b) {
    const auto n = lengths[static_cast<std::size_t>(b)];
    for (std::int64_t j = 0; j < n; ++j)
      EXPECT_NEAR(out.weights[static_cast<std::size_t>(b * L + j)], 1.0 / static_cast<double>(n), 1e-7)
          << "b " << b << " j " << j;
  }
}

TEST(Attend, WeightsMatchSoftmaxFormula) {
  const std::int64_t B = 4, L = 17;
  const std::vector<std::int64_t> lengths = {17, 12, 5, 1};
  const std::vector<float> scores = random_floats(B * L, 4, -4.f, 4.f);
  for (int threads : {1, 2}) {
    const Softmaxed out = run_softmax(B, L, lengths, scores, threads);
    EXPECT_TRUE(near_reference("weights", out.weights, expected_softmax(scores, B, L, lengths)))
        << "threads " << threads;
  }
}

TEST(Attend, LargeScoresDoNotOverflow) {
  const std::vector<float> scores = {1000.f, 999.f, -1000.f, 88.f, 89.f, 0.f};
  const Softmaxed out = run_softmax(2, 3, {3, 3}, scores);
  for (float w : out.weights) EXPECT_TRUE(std::isfinite(w));
  EXPECT_TRUE(near_reference("weights", out.weights, expected_softmax(scores, 2, 3, {3, 3})));
}

TEST(Attend, ContextIsTheWeightedSumOfAnnotations) {
  // B = 2, L = 3, E = 2; alpha given directly.
  const std::int64_t B = 2, L = 3, E = 2;
  const std::vector<float> H = {1.f,  2.f, 3.f, -4.f, 0.5f, 8.f,  // example 0: rows h_0, h_1, h_2
                                -1.f, 1.f, 2.f, 2.f,  10.f, -10.f};
  const std::vector<float> alpha = {0.5f, 0.25f, 0.25f, 0.f, 1.f, 0.f};
  OneDnnContext ctx(1);
  Attend attend(ctx, B, L, E, {L, L});
  std::vector<float> c(B * E, -1.f);
  attend.bind_annotations(H.data());
  attend.context(alpha.data(), c.data());
  EXPECT_TRUE(near_reference("context", c, expected_context(alpha, H, B, L, E)));
  // Example 1 puts all mass on h_1, so its context is h_1 exactly.
  EXPECT_EQ(c[2], H[8]);
  EXPECT_EQ(c[3], H[9]);
}

TEST(Attend, PaddedAnnotationsDoNotReachTheContext) {
  const std::int64_t B = 3, L = 9, E = 5;
  const std::vector<std::int64_t> lengths = {9, 4, 2};
  std::vector<float> H = random_floats(B * L * E, 5);
  const std::vector<float> scores = random_floats(B * L, 6, -2.f, 2.f);
  // Padded rows hold huge values: any nonzero weight on them would show.
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = lengths[static_cast<std::size_t>(b)]; j < L; ++j)
      for (std::int64_t k = 0; k < E; ++k) H[static_cast<std::size_t>((b * L + j) * E + k)] = 1e30f;
  OneDnnContext ctx(1);
  Attend attend(ctx, B, L, E, lengths);
  std::vector<float> alpha(B * L), c(B * E);
  attend.softmax(scores.data(), alpha.data());
  attend.bind_annotations(H.data());
  attend.context(alpha.data(), c.data());
  // The expectation sums over valid positions only.
  std::vector<double> expected(B * E, 0.0);
  const std::vector<double> weights = expected_softmax(scores, B, L, lengths);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < lengths[static_cast<std::size_t>(b)]; ++j)
      for (std::int64_t k = 0; k < E; ++k)
        expected[static_cast<std::size_t>(b * E + k)] +=
            weights[static_cast<std::size_t>(b * L + j)] * H[static_cast<std::size_t>((b * L + j) * E + k)];
  EXPECT_TRUE(near_reference("context", c, expected));
}

TEST(Attend, SinglePositionGetsAllTheWeight) {
  const Softmaxed out = run_softmax(3, 1, {1, 1, 1}, {-7.f, 0.f, 42.f});
  for (float w : out.weights) EXPECT_FLOAT_EQ(w, 1.0f);
}

}  // namespace
}  // namespace attnbench
