// summarize, mann_whitney_p and geometric_mean against hand-computed values and
// against a brute-force enumeration of the Mann-Whitney null distribution.
#include "driver/statistics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace attnbench {
namespace {

TEST(Summarize, EvenSampleHandValues) {
  const std::vector<double> x = {3, 1, 2, 10};
  const SampleStats s = summarize(x);
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  // Deviations -1, -3, -2, 6: squares sum to 50, over n - 1 = 3.
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(50.0 / 3.0));
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(50.0 / 3.0) / 4.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
}

TEST(Summarize, OddSampleMedianIsMiddle) {
  const std::vector<double> x = {5, 1, 3, 100, -2};
  const SampleStats s = summarize(x);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 107.0 / 5.0);
}

TEST(Summarize, SingleValueHasZeroSpread) {
  const std::vector<double> x = {7.5};
  const SampleStats s = summarize(x);
  EXPECT_DOUBLE_EQ(s.median, 7.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0.0);
  EXPECT_DOUBLE_EQ(s.cv, 0.0);
}

TEST(Summarize, EmptyIsNaN) {
  const SampleStats s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_TRUE(std::isnan(s.median));
  EXPECT_TRUE(std::isnan(s.mean));
}

// Two-sided exact p-value by listing every way to pick which of the n1 + n2 sorted
// (distinct) positions belong to the first sample.
double enumerated_p(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::sort(pooled.begin(), pooled.end());
  const auto u_of = [&](std::uint32_t mask) {  // pairs (first > second)
    int u = 0;
    for (std::size_t i = 0; i < pooled.size(); ++i)
      for (std::size_t j = 0; j < pooled.size(); ++j)
        if ((mask >> i & 1u) && !(mask >> j & 1u) && pooled[i] > pooled[j]) ++u;
    return u;
  };
  int observed = 0;
  for (double x : a)
    for (double y : b) observed += x > y;
  long below = 0, above = 0, total = 0;
  for (std::uint32_t mask = 0; mask < (1u << pooled.size()); ++mask) {
    if (std::popcount(mask) != static_cast<int>(a.size())) continue;
    const int u = u_of(mask);
    ++total;
    below += u <= observed;
    above += u >= observed;
  }
  return std::min(1.0, 2.0 * static_cast<double>(std::min(below, above)) / static_cast<double>(total));
}

TEST(MannWhitney, FullySeparatedFiveVsFiveIsTwoOver252) {
  const std::vector<double> a = {1, 2, 3, 4, 5}, b = {6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(mann_whitney_p(a, b), 2.0 / 252.0);  // C(10, 5) = 252 arrangements
  EXPECT_DOUBLE_EQ(mann_whitney_p(b, a), 2.0 / 252.0);
}

TEST(MannWhitney, InterleavedThreeVsThreeByHand) {
  // U = 3 of 9; the 20 arrangements have U = 0..9 with counts 1,1,2,3,3,3,3,2,1,1:
  // P(U <= 3) = 7/20, P(U >= 3) = 16/20, so p = 2 * 7/20.
  const std::vector<double> a = {1, 3, 5}, b = {2, 4, 6};
  EXPECT_DOUBLE_EQ(mann_whitney_p(a, b), 0.7);
}

TEST(MannWhitney, ExactMatchesEnumeration) {
  const std::vector<std::vector<double>> as = {{0.5, 2.5, 9}, {1, 2, 3, 10}, {4.5, 1.5, 8.5, 3.5, 12}, {11}};
  const std::vector<std::vector<double>> bs = {{1, 3, 4, 5, 6, 7}, {4, 5, 6, 7, 8, 9}, {2, 5, 6, 7, 9, 10, 11},
                                               {1, 2, 3, 4, 5, 6, 7, 8}};
  for (std::size_t i = 0; i < as.size(); ++i)
    EXPECT_NEAR(mann_whitney_p(as[i], bs[i]), enumerated_p(as[i], bs[i]), 1e-12) << "case " << i;
}

TEST(MannWhitney, IdenticalSamplesGiveOne) {
  const std::vector<double> a = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(mann_whitney_p(a, a), 1.0);
  const std::vector<double> same = {3, 3, 3, 3}, more_same = {3, 3, 3};
  EXPECT_DOUBLE_EQ(mann_whitney_p(same, more_same), 1.0);  // every value tied
}

TEST(MannWhitney, NormalApproximationWithTiesByHand) {
  // Pooled: 1a 2a 2a 2b 3b 3b 4b. Midranks 1, 3, 3, 3, 5.5, 5.5, 7; R_a = 7, U_a = 7 - 6 = 1.
  // mean 3*4/2 = 6; ties: 3^3-3 + 2^3-2 = 30; var = 12/12 * (8 - 30/(7*6)).
  const std::vector<double> a = {1, 2, 2}, b = {2, 3, 3, 4};
  const double z = (std::abs(1.0 - 6.0) - 0.5) / std::sqrt(8.0 - 30.0 / 42.0);
  EXPECT_NEAR(mann_whitney_p(a, b), std::erfc(z / std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(mann_whitney_p(a, b), 0.0954830, 1e-6);  // 2 * (1 - Phi(1.66716))
}

TEST(MannWhitney, LargeSamplesUseNormalApproximation) {
  std::vector<double> a, b;
  for (int i = 1; i <= 25; ++i) {
    a.push_back(i);
    b.push_back(25 + i);
  }
  // U = 0, mean 312.5, var 25*25/12 * 51, continuity 0.5.
  const double z = (312.5 - 0.5) / std::sqrt(625.0 / 12.0 * 51.0);
  EXPECT_NEAR(mann_whitney_p(a, b), std::erfc(z / std::sqrt(2.0)), 1e-15);
  EXPECT_LT(mann_whitney_p(a, b), 1e-8);
}

TEST(MannWhitney, EmptySampleIsNaN) {
  const std::vector<double> a = {1, 2};
  EXPECT_TRUE(std::isnan(mann_whitney_p(a, {})));
}

TEST(GeometricMean, HandValues) {
  const std::vector<double> two = {1, 4}, three = {2, 8, 4}, one = {3};
  EXPECT_DOUBLE_EQ(geometric_mean(two), 2.0);
  EXPECT_DOUBLE_EQ(geometric_mean(three), 4.0);
  EXPECT_DOUBLE_EQ(geometric_mean(one), 3.0);
}

TEST(GeometricMean, NonPositiveOrEmptyIsNaN) {
  const std::vector<double> zero = {1, 0}, negative = {2, -1};
  EXPECT_TRUE(std::isnan(geometric_mean(zero)));
  EXPECT_TRUE(std::isnan(geometric_mean(negative)));
  EXPECT_TRUE(std::isnan(geometric_mean({})));
}

}  // namespace
}  // namespace attnbench
