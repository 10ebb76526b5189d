// TorchGenerator against the algorithms of spec/torch-init.md re-implemented here on
// the raw std::mt19937 stream; CounterGenerator's contracts; parameter draw order.
#include "core/random.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/param_source.hpp"
#include "core/torch_avx_math.hpp"
#include "test_support.hpp"

namespace attnbench {
namespace {

// The spec's draws, written from spec/torch-init.md on the raw 32-bit MT19937 stream.
class SpecStream {
 public:
  explicit SpecStream(std::uint32_t seed) : mt_(seed) {}

  std::uint32_t next() { return static_cast<std::uint32_t>(mt_()); }

  // float32 uniform: x = (r & 0xFFFFFF) * 2^-24 in double; float(x * (to - from) + from).
  float uniform(double from, double to) {
    const double x = static_cast<double>(next() & 0xFFFFFFu) / 16777216.0;
    return static_cast<float>(x * (to - from) + from);
  }

  std::vector<float> uniforms(std::size_t n, double from, double to) {
    std::vector<float> out(n);
    for (float& x : out) x = uniform(from, to);
    return out;
  }

  // randn for n >= 16: uniforms, Box-Muller on full blocks of 16, and for a ragged
  // tail 16 fresh uniforms into the last 16 slots, transformed once more.
  std::vector<float> randn_blocks(std::size_t n) {
    std::vector<float> d = uniforms(n, 0.0, 1.0);
    for (std::size_t i = 0; i + 16 <= n; i += 16) box_muller_16(d.data() + i);
    if (n % 16 != 0) {
      for (std::size_t k = n - 16; k < n; ++k) d[k] = uniform(0.0, 1.0);
      box_muller_16(d.data() + n - 16);
    }
    return d;
  }

  // numel < 16: PyTorch's double normal_distribution. A pair of 53-bit uniforms
  // (each from two 32-bit draws, high word first) gives r cos(theta) now and caches
  // r sin(theta) for the next small draw.
  double normal_double() {
    if (cached_) {
      const double v = *cached_;
      cached_.reset();
      return v;
    }
    const double u1 = uniform53(), u2 = uniform53();
    const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
    const double theta = 2.0 * std::numbers::pi * u1;
    cached_ = r * std::sin(theta);
    return r * std::cos(theta);
  }

 private:
  static void box_muller_16(float* d) {
    for (int j = 0; j < 8; ++j) {
      const float u1 = 1.0f - d[j], u2 = d[j + 8];
      const float radius = std::sqrt(-2.0f * torch_avx::log256(u1));
      const float theta = static_cast<float>(2.0 * std::numbers::pi) * u2;
      float sin_theta = 0.0f, cos_theta = 0.0f;
      torch_avx::sincos256(theta, sin_theta, cos_theta);
      d[j] = radius * cos_theta + 0.0f;
      d[j + 8] = radius * sin_theta + 0.0f;
    }
  }

  double uniform53() {
    const std::uint64_t hi = next(), lo = next();
    const std::uint64_t bits = ((hi << 32) | lo) & ((std::uint64_t{1} << 53) - 1);
    return static_cast<double>(bits) / 9007199254740992.0;  // 2^53
  }

  std::mt19937 mt_;
  std::optional<double> cached_;
};

std::vector<float> torch_randn(TorchGenerator& g, std::size_t n) {
  std::vector<float> out(n);
  g.randn(out);
  return out;
}

std::vector<float> torch_uniform(TorchGenerator& g, std::size_t n, double from, double to) {
  std::vector<float> out(n);
  g.uniform(out, from, to);
  return out;
}

// --- TorchGenerator: uniform ---------------------------------------------------------

TEST(TorchUniform, EqualsSpecFormulaOnMt19937Outputs) {
  // Bounds exactly representable in float, so the formula has one reading.
  for (const auto& [from, to] : {std::pair{0.0, 1.0}, std::pair{-2.0, 3.0}, std::pair{-0.25, 0.5}}) {
    TorchGenerator g(12345);
    SpecStream spec(12345);
    const std::vector<float> ours = torch_uniform(g, 1000, from, to);
    EXPECT_EQ(ours, spec.uniforms(1000, from, to)) << "uniform(" << from << ", " << to << ")";
    for (float x : ours) {
      EXPECT_GE(x, from);
      EXPECT_LE(x, to);
    }
  }
}

TEST(TorchUniform, ConsecutiveCallsContinueOneStream) {
  TorchGenerator g(7);
  SpecStream spec(7);
  const std::vector<float> a = torch_uniform(g, 5, 0.0, 1.0), b = torch_uniform(g, 3, -2.0, 3.0);
  EXPECT_EQ(a, spec.uniforms(5, 0.0, 1.0));
  EXPECT_EQ(b, spec.uniforms(3, -2.0, 3.0));
}

TEST(TorchUniform, SeedIsTruncatedToItsLow32BitsLikeManualSeed) {
  TorchGenerator wide((std::uint64_t{1} << 32) + 99), narrow(99);
  EXPECT_EQ(torch_uniform(wide, 8, 0.0, 1.0), torch_uniform(narrow, 8, 0.0, 1.0));
}

// --- TorchGenerator: randn, numel >= 16 -------------------------------------------------

TEST(TorchRandn, FullBlocksMatchSpec) {
  for (std::size_t n : {16u, 32u, 64u}) {
    TorchGenerator g(0);
    SpecStream spec(0);
    EXPECT_EQ(torch_randn(g, n), spec.randn_blocks(n)) << "n = " << n;
  }
}

TEST(TorchRandn, RaggedTailRedrawsTheLast16) {
  for (std::size_t n : {17u, 20u, 31u, 33u, 320u - 1u, 40u}) {
    TorchGenerator g(3);
    SpecStream spec(3);
    EXPECT_EQ(torch_randn(g, n), spec.randn_blocks(n)) << "n = " << n;
  }
}

TEST(TorchRandn, RaggedTailKeepsTheHeadOfTheFirstBlock) {
  // n = 20: slots 0..3 come from the first block of 16 exactly as in randn(16);
  // slots 4..19 are a fresh block, so they differ from randn(16)'s slots 4..15.
  TorchGenerator g20(5), g16(5);
  const std::vector<float> a = torch_randn(g20, 20), b = torch_randn(g16, 16);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], b[i]) << i;
  int same = 0;
  for (int i = 4; i < 16; ++i) same += a[i] == b[i];
  EXPECT_EQ(same, 0);
}

TEST(TorchRandn, ConsumesNPlus16DrawsWhenRagged) {
  for (std::size_t n : {16u, 20u, 33u, 48u}) {
    TorchGenerator g(11);
    SpecStream spec(11);
    torch_randn(g, n);
    const std::size_t used = n % 16 == 0 ? n : n + 16;
    for (std::size_t i = 0; i < used; ++i) spec.next();
    EXPECT_EQ(torch_uniform(g, 4, 0.0, 1.0), spec.uniforms(4, 0.0, 1.0)) << "n = " << n;
  }
}

TEST(TorchRandn, LargeTensorHasUnitMoments) {
  TorchGenerator g(1);
  const std::vector<float> x = torch_randn(g, 100000 + 7);
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double var = 0.0;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(var), 1.0, 0.02);
}

// --- TorchGenerator: randn, numel < 16 (double, cached Box-Muller) ---------------------

TEST(TorchRandnSmall, MatchesDoubleBoxMullerOnTheStream) {
  TorchGenerator g(2);
  SpecStream spec(2);
  for (std::size_t n : {1u, 2u, 5u, 15u}) {
    const std::vector<float> ours = torch_randn(g, n);
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_FLOAT_EQ(ours[i], static_cast<float>(spec.normal_double())) << "n = " << n << ", i = " << i;
  }
}

TEST(TorchRandnSmall, SecondSampleIsCachedAcrossCalls) {
  // randn(3) then randn(1) consume the stream exactly like randn(4): the 4th value
  // is the cached r sin(theta) of the second pair, and the next draw lines up.
  TorchGenerator split(0), whole(0);
  std::vector<float> a = torch_randn(split, 3);
  const std::vector<float> b = torch_randn(split, 1);
  a.insert(a.end(), b.begin(), b.end());
  EXPECT_EQ(a, torch_randn(whole, 4));
  EXPECT_EQ(torch_uniform(split, 3, 0.0, 1.0), torch_uniform(whole, 3, 0.0, 1.0));
}

TEST(TorchRandnSmall, OddCountLeavesACachedSampleThatUsesNoDraws) {
  // randn(1) draws two 53-bit uniforms (4 words); the next randn(1) draws nothing.
  TorchGenerator g(4);
  SpecStream spec(4);
  torch_randn(g, 1);
  torch_randn(g, 1);
  for (int i = 0; i < 4; ++i) spec.next();
  EXPECT_EQ(torch_uniform(g, 2, 0.0, 1.0), spec.uniforms(2, 0.0, 1.0));
}

TEST(TorchRandnSmall, CacheSurvivesUniformAndBlockDraws) {
  // Neither uniform_ nor the >= 16 path touches the cached double sample.
  TorchGenerator g(9), fresh(9);
  SpecStream spec(9);
  const float first = torch_randn(g, 1)[0];
  const std::vector<float> u = torch_uniform(g, 3, 0.0, 1.0);
  const std::vector<float> block = torch_randn(g, 16);
  const float cached = torch_randn(g, 1)[0];

  EXPECT_EQ(std::vector<float>({first, cached}), torch_randn(fresh, 2));
  for (int i = 0; i < 4; ++i) spec.next();
  EXPECT_EQ(u, spec.uniforms(3, 0.0, 1.0));
  EXPECT_EQ(block, spec.randn_blocks(16));
}

// --- TorchGenerator: randint -----------------------------------------------------------

TEST(TorchRandint, IsLowPlusDrawModuloRange) {
  TorchGenerator g(21);
  SpecStream spec(21);
  std::vector<std::int64_t> out(2000);
  g.randint(out, -7, 5);
  std::set<std::int64_t> seen;
  for (std::int64_t x : out) {
    EXPECT_EQ(x, -7 + static_cast<std::int64_t>(spec.next() % 12u));
    EXPECT_GE(x, -7);
    EXPECT_LT(x, 5);
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 12u);  // every value in [-7, 5) occurs
}

TEST(TorchRandint, SingleValueRangeAndEmptyRange) {
  TorchGenerator g(0);
  std::vector<std::int64_t> out(10);
  g.randint(out, 4, 5);
  EXPECT_EQ(out, std::vector<std::int64_t>(10, 4));
  EXPECT_THROW(g.randint(out, 5, 5), std::invalid_argument);
  EXPECT_THROW(g.randint(out, 6, 5), std::invalid_argument);
}

// --- CounterGenerator -------------------------------------------------------------------

template <typename T>
std::vector<T> first(const std::vector<T>& v, std::size_t n) {
  return {v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)};
}

TEST(CounterGenerator, SameSeedGivesSameValues) {
  CounterGenerator a(42), b(42);
  std::vector<float> ua(1000), ub(1000), na(1000), nb(1000);
  std::vector<std::int64_t> ia(1000), ib(1000);
  a.uniform(ua, -1, 1);
  b.uniform(ub, -1, 1);
  a.randn(na);
  b.randn(nb);
  a.randint(ia, 0, 1000);
  b.randint(ib, 0, 1000);
  EXPECT_EQ(ua, ub);
  EXPECT_EQ(na, nb);
  EXPECT_EQ(ia, ib);
}

TEST(CounterGenerator, DifferentSeedsDiffer) {
  CounterGenerator a(42), b(43);
  std::vector<float> ua(1000), ub(1000);
  a.uniform(ua, 0, 1);
  b.uniform(ub, 0, 1);
  int equal = 0;
  for (std::size_t i = 0; i < ua.size(); ++i) equal += ua[i] == ub[i];
  EXPECT_LT(equal, 5);
}

TEST(CounterGenerator, EachCallStartsANewStream) {
  CounterGenerator g(1);
  std::vector<float> x(100), y(100);
  g.uniform(x, 0, 1);
  g.uniform(y, 0, 1);
  EXPECT_NE(x, y);
}

TEST(CounterGenerator, ElementDependsOnlyOnSeedStreamAndIndex) {
  // A 100000-element fill (parallel when OpenMP has threads) begins with exactly the
  // values of a 10-element fill of the same stream, for any thread count.
  const int saved = omp_get_max_threads();
  std::vector<float> big1(100000), big2(100000), small(10);
  std::vector<float> nbig(100000), nsmall(10);
  omp_set_num_threads(1);
  CounterGenerator one(5);
  one.uniform(big1, -3, 3);
  omp_set_num_threads(2);
  CounterGenerator two(5), prefix(5);
  two.uniform(big2, -3, 3);
  prefix.uniform(small, -3, 3);
  two.randn(nbig);
  prefix.randn(nsmall);
  omp_set_num_threads(saved);
  EXPECT_EQ(big1, big2);
  EXPECT_EQ(first(big1, 10), small);
  EXPECT_EQ(first(nbig, 10), nsmall);
}

TEST(CounterGenerator, UniformStaysInRange) {
  CounterGenerator g(8);
  std::vector<float> x(50000);
  g.uniform(x, -0.5, 2.0);
  EXPECT_GE(*std::min_element(x.begin(), x.end()), -0.5f);
  EXPECT_LE(*std::max_element(x.begin(), x.end()), 2.0f);
  EXPECT_LT(*std::min_element(x.begin(), x.end()), -0.49f);  // covers the range
  EXPECT_GT(*std::max_element(x.begin(), x.end()), 1.99f);
}

TEST(CounterGenerator, RandnHasUnitMoments) {
  CounterGenerator g(8);
  std::vector<float> x(100000);
  g.randn(x);
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double var = 0.0;
  for (float v : x) {
    ASSERT_TRUE(std::isfinite(v));
    var += (v - mean) * (v - mean);
  }
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(var / static_cast<double>(x.size())), 1.0, 0.02);
}

TEST(CounterGenerator, RandintCoversItsRange) {
  CounterGenerator g(3);
  std::vector<std::int64_t> x(2000);
  g.randint(x, -3, 4);
  std::set<std::int64_t> seen(x.begin(), x.end());
  EXPECT_EQ(seen, (std::set<std::int64_t>{-3, -2, -1, 0, 1, 2, 3}));
  EXPECT_THROW(g.randint(x, 1, 1), std::invalid_argument);
}

// --- make_linear / make_gru / make_embedding -----------------------------------------

TEST(MakeLinear, TorchDrawsWeightThenBiasWithBoundOneOverSqrtIn) {
  // in = 16: bound 1/4, exactly representable, so the spec formula applies directly.
  ParamSource source(InitKind::torch, 3);
  const LinearParams p = make_linear(source, 16, 8, true);
  SpecStream spec(3);
  EXPECT_EQ(p.in, 16);
  EXPECT_EQ(p.out, 8);
  EXPECT_EQ(p.weight, spec.uniforms(16 * 8, -0.25, 0.25));
  EXPECT_EQ(p.bias, spec.uniforms(8, -0.25, 0.25));
}

TEST(MakeLinear, NoBiasDrawsOnlyTheWeight) {
  ParamSource source(InitKind::torch, 3);
  const LinearParams a = make_linear(source, 4, 3, false);
  const LinearParams b = make_linear(source, 4, 2, false);
  SpecStream spec(3);
  EXPECT_TRUE(a.bias.empty());
  EXPECT_EQ(a.weight, spec.uniforms(12, -0.5, 0.5));
  EXPECT_EQ(b.weight, spec.uniforms(8, -0.5, 0.5));
}

TEST(MakeGru, TorchDrawsWihWhhBihBhhWithBoundOneOverSqrtHidden) {
  // hidden = 4: bound 1/2 (not 1/sqrt(input) = 1/sqrt(3)).
  ParamSource source(InitKind::torch, 17);
  const GruParams p = make_gru(source, 3, 4);
  SpecStream spec(17);
  EXPECT_EQ(p.w_ih, spec.uniforms(12 * 3, -0.5, 0.5));
  EXPECT_EQ(p.w_hh, spec.uniforms(12 * 4, -0.5, 0.5));
  EXPECT_EQ(p.b_ih, spec.uniforms(12, -0.5, 0.5));
  EXPECT_EQ(p.b_hh, spec.uniforms(12, -0.5, 0.5));
}

float max_abs(const std::vector<float>& v) {
  float m = 0.f;
  for (float x : v) m = std::max(m, std::abs(x));
  return m;
}

class InitBounds : public ::testing::TestWithParam<InitKind> {};

TEST_P(InitBounds, LinearIsWithinOneOverSqrtInAndReachesIt) {
  ParamSource source(GetParam(), 5);
  const LinearParams p = make_linear(source, 5, 200, true);  // 1/sqrt(5) = 0.447; 1/sqrt(200) = 0.071
  const double bound = 1.0 / std::sqrt(5.0);
  EXPECT_LE(max_abs(p.weight), static_cast<float>(bound));
  EXPECT_LE(max_abs(p.bias), static_cast<float>(bound));
  EXPECT_GT(max_abs(p.weight), 0.95 * bound);
  EXPECT_GT(max_abs(p.bias), 0.9 * bound);
}

TEST_P(InitBounds, GruIsWithinOneOverSqrtHiddenAndReachesIt) {
  ParamSource source(GetParam(), 6);
  const GruParams p = make_gru(source, 50, 5);  // 1/sqrt(5) = 0.447; 1/sqrt(50) = 0.141
  const double bound = 1.0 / std::sqrt(5.0);
  for (const std::vector<float>* v : {&p.w_ih, &p.w_hh, &p.b_ih, &p.b_hh})
    EXPECT_LE(max_abs(*v), static_cast<float>(bound));
  EXPECT_GT(max_abs(p.w_ih), 0.95 * bound);
  EXPECT_GT(max_abs(p.w_hh), 0.9 * bound);
  EXPECT_EQ(p.w_ih.size(), 15u * 50u);
  EXPECT_EQ(p.w_hh.size(), 15u * 5u);
  EXPECT_EQ(p.b_ih.size(), 15u);
  EXPECT_EQ(p.b_hh.size(), 15u);
}

INSTANTIATE_TEST_SUITE_P(BothInits, InitBounds, ::testing::Values(InitKind::fast, InitKind::torch),
                         [](const auto& info) { return to_string(info.param); });

TEST(MakeLinear, TorchBoundIsRoundedLikeTheGenerator) {
  // A bound that is not a float: make_linear draws exactly what uniform(-b, b) draws.
  ParamSource source(InitKind::torch, 8);
  TorchGenerator g(8);
  const double bound = 1.0 / std::sqrt(5.0);
  const LinearParams p = make_linear(source, 5, 7, true);
  EXPECT_EQ(p.weight, torch_uniform(g, 35, -bound, bound));
  EXPECT_EQ(p.bias, torch_uniform(g, 7, -bound, bound));
}

TEST(MakeEmbedding, TorchIsRandnOfTheWholeTable) {
  ParamSource source(InitKind::torch, 0);
  const std::vector<float> table = make_embedding(source, 10, 3);  // 30 elements: ragged tail
  SpecStream spec(0);
  EXPECT_EQ(table, spec.randn_blocks(30));
}

}  // namespace
}  // namespace attnbench
