// The fused kernels (Impl::fused) one by one: their tanh against the exact tanh, each
// loop against a double loop (FusedProjection: fused_projection_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "core/address_sanitizer.hpp"
#include "core/fused_kernels.hpp"
#include "core/fused_math.hpp"
#include "core/fused_prefetch.hpp"
#include "core/fused_avx2.hpp"
#include "core/fused_avx512.hpp"
#include "core/onednn_context.hpp"
#include "core/reference.hpp"
#include "test_support.hpp"

namespace attnbench {
namespace {

using test::count;
using test::near_reference;
using test::random_floats;
using test::widen;

// --- tanh ------------------------------------------------------------------------------------

// Bounds the fused tanh keeps for every float (measured on all 2^32 bit patterns), all
// within the 2e-7 absolute the fused path promises. In a score v . tanh(z) over A terms
// that adds at most 2e-7 * sum |v_a|, far inside the 1e-5 relative tolerance of the scorer
// checks. On AVX-512 CPUs the table tanh (fused_avx512's tanh16): 5.86e-8 absolute at
// x = 3.9999, 1.143e-7 relative at x = 0.1364. On AVX2 CPUs fused_avx2's tanh8 (degree-4
// expm1, quotient from vrcpps): 1.09e-7 absolute at x = 8.1445, 1.807e-7 relative at
// x = 0.1517. Elsewhere fast_tanh's arithmetic, with FMA (the AVX2 clone): 1.49e-7 absolute
// at x = 4.505, 1.78e-7 relative at x = 0.174, 2.5 ulp of values near 1; without FMA (the
// baseline clone) the division's Newton residual n - d q is rounded: 1.77e-7 absolute at
// x = 2.975, 2.25e-7 relative at x = 0.152.
struct TanhBounds {
  double abs, rel;
};
constexpr TanhBounds kTable{6e-8, 1.15e-7};
constexpr TanhBounds kAvx2{1.1e-7, 1.85e-7};
constexpr TanhBounds kWithFma{1.5e-7, 1.8e-7};
constexpr TanhBounds kWithoutFma{1.8e-7, 2.3e-7};

// The bounds of the loop this process runs (fused::loops_name()): the table's, fused_avx2's,
// else fast_tanh's arithmetic, with FMA in the clones of every AVX2 CPU, without in a build
// of the baseline loops alone (fused_baseline_tests).
TanhBounds dispatched_bounds() {
  const std::string loops = fused::loops_name();
  if (loops == "avx512") return kTable;
  if (loops == "avx2") return kAvx2;
  return ATTNBENCH_X86_LOOPS && __builtin_cpu_supports("fma") ? kWithFma : kWithoutFma;
}

// The largest absolute and relative errors of y against std::tanh(double(x)).
struct TanhErrors {
  double abs = 0.0, rel = 0.0, abs_at = 0.0, rel_at = 0.0;

  void add(const std::vector<float>& x, const std::vector<float>& y) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double exact = std::tanh(static_cast<double>(x[i]));
      const double error = std::abs(y[i] - exact);
      const double relative = exact == 0.0 ? error : error / std::abs(exact);
      if (!(error <= abs)) {  // a NaN result counts as the worst
        abs = error;
        abs_at = x[i];
      }
      if (!(relative <= rel)) {
        rel = relative;
        rel_at = x[i];
      }
    }
  }

  ::testing::AssertionResult within(TanhBounds bounds) const {
    if (abs <= bounds.abs && rel <= bounds.rel) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "max abs error " << abs << " at x = " << abs_at << ", max rel error "
                                         << rel << " at x = " << rel_at;
  }
};

// Applies `tanh_of` (x, y) to every `stride`-th float bit pattern from 0 to +inf, both
// signs, in chunks, and returns the errors.
template <class TanhOf>
TanhErrors errors_by_stride(std::uint32_t stride, TanhOf tanh_of) {
  TanhErrors errors;
  std::vector<float> x, y;
  for (std::uint64_t bits = 0; bits <= 0x7f800000u;) {
    x.clear();
    for (; x.size() < (1u << 20) && bits <= 0x7f800000u; bits += stride)
      for (std::uint32_t sign : {0u, 0x80000000u}) {
        const std::uint32_t b = static_cast<std::uint32_t>(bits) | sign;
        float value;
        std::memcpy(&value, &b, sizeof value);
        x.push_back(value);
      }
    y.assign(x.size(), 0.f);
    tanh_of(x, y);
    errors.add(x, y);
  }
  return errors;
}

TEST(AlignedNew, EveryHeapBlockStartsOnACacheLine) {
#if ATTNBENCH_ADDRESS_SANITIZER
  GTEST_SKIP() << "src/core/aligned_new.cpp is left out under AddressSanitizer";
#else
  // From one cache line up to above glibc's mmap threshold, odd and even; kept alive together
  // so that each comes from a fresh block. (Blocks under 64 bytes come from malloc.)
  std::vector<std::vector<float>> blocks;
  for (std::size_t floats : {16u, 17u, 100u, 4099u, 1u << 20})
    for (int copy = 0; copy < 3; ++copy) blocks.emplace_back(floats + copy, 1.f);
  for (const std::vector<float>& block : blocks)
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block.data()) % 64, 0u) << block.size() << " floats";
  const std::unique_ptr<char[]> bytes(new char[64]);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(bytes.get()) % 64, 0u);
  const volatile std::size_t huge = SIZE_MAX - 10;  // volatile: not a constant the compiler warns of
  EXPECT_THROW(static_cast<void>(::operator new(huge)), std::bad_alloc);  // no wrap in the rounding
#endif
}

// The loops the fused tests run: the best the CPU has (AVX-512's, else AVX2's, else the
// clones), unless CTest's fused_avx2_loops or fused_portable_loops case sets
// ATTNBENCH_FUSED_LOOPS=avx2 or portable (then every *Fused* test checks those).
TEST(FusedLoops, AreTheBestOfTheCpuUnlessOthersAreAskedFor) {
  const char* setting = std::getenv("ATTNBENCH_FUSED_LOOPS");
  const std::string asked = setting ? setting : "";
  bool cpu_avx512 = false, cpu_avx2 = false;
#if ATTNBENCH_X86_LOOPS
  cpu_avx512 = fused::avx512::available();
  cpu_avx2 = fused::avx2::available();
#endif
  const char* expected = asked == "portable"                   ? "portable"
                         : cpu_avx512 && asked != "avx2"        ? "avx512"
                         : cpu_avx2                             ? "avx2"
                                                                : "portable";
  EXPECT_STREQ(fused::loops_name(), expected);
  EXPECT_EQ(fused::tanh_term_macs(), std::string(expected) == "avx512" ? 4.0 : 10.0);
  if (asked == "avx2" && !cpu_avx2)  // the clones run, and attnbench refuses the setting
    EXPECT_NE(fused::loops_setting_error().find("ATTNBENCH_FUSED_LOOPS=avx2: "), std::string::npos);
  else
    EXPECT_EQ(fused::loops_setting_error(), "");
}

TEST(FusedTanh, InlineFunctionMeetsItsBoundsOnADenseSetOfFloats) {
  // Compiled here for baseline x86-64 (no FMA): the arithmetic of the kernels' default clone.
  // Stride 127: ~34M values, every binade sampled densely.
  const TanhErrors errors = errors_by_stride(127, [](const std::vector<float>& x, std::vector<float>& y) {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = fused::fast_tanh(x[i]);
  });
  EXPECT_TRUE(errors.within(kWithoutFma));
}

TEST(FusedTanh, DispatchedKernelMeetsItsBoundsOnADenseSetOfFloats) {
  // The loop this CPU runs (the table tanh on AVX-512, fused_avx2's on AVX2, else the
  // baseline clone), or the one ATTNBENCH_FUSED_LOOPS asks for.
  const TanhErrors errors = errors_by_stride(113, [](const std::vector<float>& x, std::vector<float>& y) {
    fused::tanh_all(x.data(), static_cast<std::int64_t>(x.size()), y.data());
  });
  EXPECT_TRUE(errors.within(dispatched_bounds()));
}

TEST(FusedTanh, DispatchedKernelMeetsItsBoundsOnAnEvenGrid) {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 5e-5f);  // [-10, 10]
  std::vector<float> y(x.size());
  fused::tanh_all(x.data(), static_cast<std::int64_t>(x.size()), y.data());
  TanhErrors errors;
  errors.add(x, y);
  EXPECT_TRUE(errors.within(dispatched_bounds()));
  EXPECT_GT(errors.abs, 0.0);  // the check does see errors: the fused tanh is not exact
}

TEST(FusedTanh, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {inf, -inf, nan, 0.f, 1e-30f, -1e-30f, 3e38f, -3e38f, 20.f, -20.f};
  std::vector<float> y(x.size());
  fused::tanh_all(x.data(), static_cast<std::int64_t>(x.size()), y.data());
  EXPECT_EQ(y[0], 1.f);
  EXPECT_EQ(y[1], -1.f);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 0.f);
  EXPECT_EQ(y[4], 1e-30f);  // tanh(x) rounds to x for tiny x
  EXPECT_EQ(y[5], -1e-30f);
  EXPECT_EQ(y[6], 1.f);
  EXPECT_EQ(y[7], -1.f);
  EXPECT_EQ(y[8], 1.f);
  EXPECT_EQ(y[9], -1.f);
  EXPECT_EQ(fused::fast_tanh(inf), 1.f);
  EXPECT_TRUE(std::isnan(fused::fast_tanh(nan)));
}

TEST(FusedExp, WithinTwoUlpOfExpOnADenseSetOfNonPositiveFloats) {
  // Every 61st float of (-87.33, -0]: ~18M values, every binade sampled densely.
  const std::uint32_t lowest = fused::float_bits(-87.33f);
  double worst_ulp = 0.0;
  float worst_y = 0.f;
  for (std::uint32_t bits = 0x80000000u; bits < lowest; bits += 61) {
    const float y = fused::from_bits(bits);
    const double exact = std::exp(static_cast<double>(y));
    const double ulp = std::ldexp(1.0, std::ilogb(exact) - 23);
    const double error = std::abs(static_cast<double>(fused::exp_nonpositive(y)) - exact) / ulp;
    if (error > worst_ulp) worst_ulp = error, worst_y = y;
  }
  EXPECT_LE(worst_ulp, 2.0) << "at y = " << worst_y;
  EXPECT_GT(worst_ulp, 0.5);  // the check does see errors: the fused exp is not correctly rounded
}

TEST(FusedExp, EdgesOfItsRange) {
  EXPECT_EQ(fused::exp_nonpositive(0.f), 1.f);
  EXPECT_EQ(fused::exp_nonpositive(-0.f), 1.f);
  EXPECT_GT(fused::exp_nonpositive(-87.3f), 0.f);
  EXPECT_EQ(fused::exp_nonpositive(-87.33f), 0.f);  // exp about 2^-126 and below: flushed
  EXPECT_EQ(fused::exp_nonpositive(-87.34f), 0.f);
  EXPECT_EQ(fused::exp_nonpositive(-1000.f), 0.f);
  EXPECT_EQ(fused::exp_nonpositive(-std::numeric_limits<float>::infinity()), 0.f);
  EXPECT_TRUE(std::isnan(fused::exp_nonpositive(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(fused::exp_nonpositive(-std::numeric_limits<float>::quiet_NaN())));
}

TEST(SpreadPrefetch, RequestsTheWholeRangeEvenlyByTheLastStepAndNothingWithoutSteps) {
  const std::vector<char> buffer(100000);
  const char* begin = buffer.data() + 3;
  // From the start of begin's cache line to the range's end: 1094 or 1095 lines, 85 a step.
  const auto bytes = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(begin) % 64) + 70000;
  const std::int64_t per_step = ((bytes + 63) / 64 + 12) / 13 * 64;
  fused::SpreadPrefetch spread({begin, 70000}, 13);
  EXPECT_EQ(spread.remaining(), bytes);
  for (std::int64_t step = 1; step <= 13; ++step) {
    spread.step();
    EXPECT_EQ(spread.remaining(), std::max<std::int64_t>(0, bytes - step * per_step)) << step;
  }
  EXPECT_EQ(spread.remaining(), 0);
  fused::SpreadPrefetch without_steps({begin, 70000}, 0);
  without_steps.step();
  EXPECT_EQ(without_steps.remaining(), bytes);
  fused::SpreadPrefetch empty({}, 13);
  EXPECT_EQ(empty.remaining(), 0);
}

TEST(StreamPrefetch, RequestsTheBytesAheadCutAtTheReadableEnd) {
  const std::vector<char> buffer(100000);
  const char* begin = buffer.data() + 3;
  constexpr std::int64_t ahead = fused::StreamPrefetch::kBytesAhead;
  const fused::StreamPrefetch stream(begin, 70000);
  const auto at = [&](std::int64_t offset, std::int64_t bytes) {
    const fused::StreamPrefetch::Range r = stream.range(begin + offset, bytes);
    return std::pair<std::int64_t, std::int64_t>(r.begin - begin, r.end - begin);
  };
  EXPECT_EQ(at(0, 256), std::make_pair(ahead, ahead + 256));
  EXPECT_EQ(at(1000, 40), std::make_pair(1000 + ahead, 1000 + ahead + 40));
  EXPECT_EQ(at(70000 - ahead - 100, 256), std::make_pair(std::int64_t{69900}, std::int64_t{70000}));  // cut
  EXPECT_EQ(at(70000 - ahead, 256), std::make_pair(std::int64_t{70000}, std::int64_t{70000}));        // none
  EXPECT_EQ(at(69999, 256), std::make_pair(std::int64_t{70000}, std::int64_t{70000}));
  const fused::StreamPrefetch nothing(begin, 0);
  const fused::StreamPrefetch::Range r = nothing.range(begin, 256);
  EXPECT_EQ(r.begin, r.end);
}

// --- the row loops against double loops --------------------------------------------------------

// Widths that cover full vectors, remainders, a single lane, and blocks of 64 (the AVX-512
// loops' four accumulators) whole and with a tail.
class FusedRows : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(FusedRows, DotRowsMatchDouble) {
  const std::int64_t n = 7, width = GetParam();
  const std::vector<float> rows = random_floats(count(n * width), 1), x = random_floats(count(width), 2);
  std::vector<float> out(count(n), std::nanf(""));
  fused::dot_rows(rows.data(), x.data(), n, width, out.data());
  std::vector<double> ref(count(n), 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t k = 0; k < width; ++k) ref[count(j)] += double(rows[count(j * width + k)]) * x[count(k)];
  EXPECT_TRUE(near_reference("dot_rows", out, ref));
}

TEST_P(FusedRows, TanhDotRowsMatchDoubleAndReadNoRowPastN) {
  // 3 blocks of 4 and a single row scored; the readable rows after them (NaN, so a read
  // would show) reach past any prefetch distance (at most 16 KiB of 4-byte rows ahead).
  const std::int64_t n = 13, readable = n + 4096 + 4, width = GetParam();
  std::vector<float> rows = random_floats(count(n * width), 3, -2.f, 2.f);
  rows.resize(count(readable * width), std::nanf(""));
  const std::vector<float> x = random_floats(count(width), 4, -2.f, 2.f), v = random_floats(count(width), 5);
  std::vector<float> out(count(n), std::nanf(""));
  fused::tanh_dot_rows(rows.data(), x.data(), v.data(), n, width, out.data(), readable);
  std::vector<double> ref(count(n), 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t k = 0; k < width; ++k)
      ref[count(j)] += double(v[count(k)]) * std::tanh(double(rows[count(j * width + k)]) + x[count(k)]);
  EXPECT_TRUE(near_reference("tanh_dot_rows", out, ref));
}

TEST_P(FusedRows, TanhDotRowsGiveTheSameScoresWhateverTheyPrefetch) {
  // The next pass's range starts inside a cache line and holds NaN: were it read, or the
  // scores depend on it, the two calls would differ.
  const std::int64_t n = 13, width = GetParam();
  const std::vector<float> rows = random_floats(count(n * width), 8, -2.f, 2.f);
  const std::vector<float> x = random_floats(count(width), 9, -2.f, 2.f), v = random_floats(count(width), 10);
  const std::vector<float> next_pass(count(n * width + 7), std::nanf(""));
  std::vector<float> alone(count(n), std::nanf("")), along(count(n), std::nanf("")), none(count(n), std::nanf(""));
  fused::tanh_dot_rows(rows.data(), x.data(), v.data(), n, width, alone.data(), n);
  fused::tanh_dot_rows(rows.data(), x.data(), v.data(), n, width, along.data(), n,
                       {next_pass.data() + 3, static_cast<std::int64_t>(sizeof(float)) * n * width});
  fused::tanh_dot_rows(rows.data(), x.data(), v.data(), n, width, none.data(), 0);  // nothing prefetched
  for (std::int64_t j = 0; j < n; ++j) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(alone[count(j)]), std::bit_cast<std::uint32_t>(along[count(j)])) << j;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(alone[count(j)]), std::bit_cast<std::uint32_t>(none[count(j)])) << j;
  }
}

TEST_P(FusedRows, AddTanhRowsEqualsFastTanhOfTheSumAndIsNearDouble) {
  const std::int64_t n = 7, width = GetParam();
  const std::vector<float> rows = random_floats(count(n * width), 6, -3.f, 3.f);
  const std::vector<float> x = random_floats(count(width), 7, -3.f, 3.f);
  std::vector<float> out(count(n * width), std::nanf(""));
  fused::add_tanh_rows(rows.data(), x.data(), n, width, out.data());
  std::vector<float> same(out.size());
  std::vector<float> sums(out.size());
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t k = 0; k < width; ++k) sums[count(j * width + k)] = rows[count(j * width + k)] + x[count(k)];
  fused::tanh_all(sums.data(), static_cast<std::int64_t>(sums.size()), same.data());
  EXPECT_EQ(out, same);  // the same clone's tanh, element for element
  double worst = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - std::tanh(double(sums[i]))));
  EXPECT_LE(worst, 2e-7);
}

TEST_P(FusedRows, WeightedSumRowsMatchDouble) {
  const std::int64_t n = 5, width = GetParam();
  const std::vector<float> w = random_floats(count(n), 6, 0.f, 1.f), rows = random_floats(count(n * width), 7);
  std::vector<float> out(count(width), std::nanf(""));
  fused::weighted_sum_rows(w.data(), rows.data(), n, width, out.data());
  std::vector<double> ref(count(width), 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t k = 0; k < width; ++k) ref[count(k)] += double(w[count(j)]) * rows[count(j * width + k)];
  EXPECT_TRUE(near_reference("weighted_sum_rows", out, ref));
}

TEST_P(FusedRows, MaskedSoftmaxRowMatchesReferenceAndZeroesPadding) {
  const std::int64_t src_len = GetParam() + 3;
  for (std::int64_t len : {std::int64_t{1}, GetParam(), src_len}) {
    SCOPED_TRACE("len " + std::to_string(len));
    std::vector<float> logits = random_floats(count(src_len), 8, -5.f, 5.f);
    for (std::int64_t j = len; j < src_len; ++j) logits[count(j)] = std::nanf("");  // must not be read
    std::vector<float> alpha(count(src_len), std::nanf(""));
    fused::masked_softmax_row(logits.data(), len, src_len, alpha.data());
    std::vector<double> e = widen(logits);
    const std::vector<std::int64_t> lengths = {len};
    EXPECT_TRUE(near_reference("alpha", alpha, ref::masked_softmax(e, 1, src_len, lengths)));
    for (std::int64_t j = len; j < src_len; ++j) EXPECT_EQ(alpha[count(j)], 0.f) << "j " << j;
  }
}

TEST(FusedRows, MaskedSoftmaxRowIsStableForLargeLogits) {
  const std::vector<float> logits = {1000.f, 999.f, -1000.f};
  std::vector<float> alpha(3);
  fused::masked_softmax_row(logits.data(), 3, 3, alpha.data());
  EXPECT_NEAR(alpha[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(alpha[1], std::exp(-1.0) / (1.0 + std::exp(-1.0)), 1e-7);
  EXPECT_EQ(alpha[2], 0.f);
}

// --- bf16 rows: the same loops over rows stored as bf16, loaded into f32 ----------------------

// x rounded to bf16 (fused::to_bf16) and back to f32.
std::vector<float> bf16_rounded(const std::vector<float>& x, std::vector<std::uint16_t>& bits) {
  bits.assign(x.size(), 0);
  fused::to_bf16(x.data(), static_cast<std::int64_t>(x.size()), bits.data());
  std::vector<float> back(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) back[i] = fused::load(bits.data(), static_cast<std::int64_t>(i));
  return back;
}

// The streamed sum against the plain one: bit for bit where both are the clones, within the
// f32 tolerance where the plain one is fused_avx512's (other order of additions).
::testing::AssertionResult streamed_matches_plain(const std::vector<float>& streamed, const std::vector<float>& plain) {
  if (std::string(fused::loops_name()) != "avx512") {
    if (streamed == plain) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the clones' streamed sum differs from their plain one";
  }
  return near_reference("streamed", streamed, widen(plain));
}

TEST_P(FusedRows, StreamedBf16WeightedSumMatchesThePlainOneAndReadsNoRowPastN) {
  // 3 blocks of 4 and a single row summed; the readable rows after them (bf16 NaN, so a
  // read would show) reach past any prefetch distance (at most 16 KiB of 2-byte rows ahead).
  const std::int64_t n = 13, readable = n + 8192 + 4, width = GetParam();
  std::vector<std::uint16_t> bits;
  bf16_rounded(random_floats(count(n * width), 25, -2.f, 2.f), bits);
  bits.resize(count(readable * width), std::uint16_t{0x7fc0});
  const std::vector<float> w = random_floats(count(n), 26, 0.f, 1.f);
  std::vector<float> plain(count(width)), streamed(count(width), std::nanf(""));
  fused::weighted_sum_rows(w.data(), bits.data(), n, width, plain.data());
  fused::weighted_sum_rows_streamed(w.data(), bits.data(), n, width, streamed.data(), readable);
  EXPECT_TRUE(streamed_matches_plain(streamed, plain));
  EXPECT_TRUE(std::all_of(plain.begin(), plain.end(), [](float x) { return std::isfinite(x); }));
}

TEST(FusedBf16, StreamedWeightedSumOfAnyRowCountIsNearDoubleAndReadsNoRowPastN) {
  // Every remainder of the four-row blocks (n 0 to 7), whole 32-element chunks with tails of
  // 0, 13, 16 and 29 elements and widths under 32, with and without rows to prefetch: the
  // rows past n are bf16 NaN, so reading one would show.
  for (const std::int64_t width : {std::int64_t{5}, std::int64_t{31}, std::int64_t{32}, std::int64_t{45},
                                   std::int64_t{48}, std::int64_t{61}, std::int64_t{96}})
    for (std::int64_t n = 0; n <= 7; ++n)
      for (const std::int64_t readable : {n, n + 64}) {
        SCOPED_TRACE("width " + std::to_string(width) + " n " + std::to_string(n) + " readable " +
                     std::to_string(readable));
        std::vector<std::uint16_t> bits;
        const std::vector<float> rounded = bf16_rounded(random_floats(count(n * width), 29, -2.f, 2.f), bits);
        bits.resize(count(readable * width), std::uint16_t{0x7fc0});
        const std::vector<float> w = random_floats(count(n), 30, 0.f, 1.f);
        std::vector<float> out(count(width), std::nanf(""));
        fused::weighted_sum_rows_streamed(w.data(), bits.data(), n, width, out.data(), readable);
        std::vector<double> ref(count(width), 0.0);
        for (std::int64_t j = 0; j < n; ++j)
          for (std::int64_t k = 0; k < width; ++k)
            ref[count(k)] += double(w[count(j)]) * rounded[count(j * width + k)];
        EXPECT_TRUE(near_reference("streamed bf16", out, ref));
      }
}

TEST_P(FusedRows, StreamedF32WeightedSumMatchesThePlainOneAndReadsNoRowPastN) {
  // As above with f32 rows, NaN past n.
  const std::int64_t n = 13, width = GetParam();
  std::vector<float> rows = random_floats(count(n * width), 27, -2.f, 2.f);
  rows.resize(count((n + 4) * width), std::nanf(""));
  const std::vector<float> w = random_floats(count(n), 28, 0.f, 1.f);
  std::vector<float> plain(count(width)), streamed(count(width), std::nanf(""));
  fused::weighted_sum_rows(w.data(), rows.data(), n, width, plain.data());
  fused::weighted_sum_rows_streamed(w.data(), rows.data(), n, width, streamed.data());
  EXPECT_TRUE(streamed_matches_plain(streamed, plain));
  EXPECT_TRUE(std::all_of(plain.begin(), plain.end(), [](float x) { return std::isfinite(x); }));
}

TEST_P(FusedRows, Bf16RowsGiveTheF32LoopsResultOnTheRoundedRowsBitForBit) {
  // Loading a bf16 element is exact, so each bf16 loop equals its f32 loop run on the
  // rounded rows, bit for bit.
  const std::int64_t n = 7, width = GetParam();
  std::vector<std::uint16_t> bits;
  const std::vector<float> rounded = bf16_rounded(random_floats(count(n * width), 21, -2.f, 2.f), bits);
  const std::vector<float> x = random_floats(count(width), 22, -2.f, 2.f), v = random_floats(count(width), 23);
  const std::vector<float> w = random_floats(count(n), 24, 0.f, 1.f);
  std::vector<float> from_bf16(count(n)), from_f32(count(n));
  fused::dot_rows(bits.data(), x.data(), n, width, from_bf16.data());
  fused::dot_rows(rounded.data(), x.data(), n, width, from_f32.data());
  EXPECT_EQ(from_bf16, from_f32);
  fused::tanh_dot_rows(bits.data(), x.data(), v.data(), n, width, from_bf16.data(), n);
  fused::tanh_dot_rows(rounded.data(), x.data(), v.data(), n, width, from_f32.data(), n);
  EXPECT_EQ(from_bf16, from_f32);
  std::vector<float> sum_bf16(count(width)), sum_f32(count(width));
  fused::weighted_sum_rows(w.data(), bits.data(), n, width, sum_bf16.data());
  fused::weighted_sum_rows(w.data(), rounded.data(), n, width, sum_f32.data());
  EXPECT_EQ(sum_bf16, sum_f32);
  // And the rounding moved the rows by at most 2^-8 relative (8 significant bits, nearest).
  const std::vector<float> original = random_floats(count(n * width), 21, -2.f, 2.f);
  for (std::size_t i = 0; i < original.size(); ++i)
    ASSERT_LE(std::abs(double(rounded[i]) - original[i]), std::ldexp(std::abs(double(original[i])), -8)) << i;
}

TEST(FusedBf16, RoundsLikeOneDnnsReorderBitForBit) {
  // Ties, carries into the exponent, the largest finite values and infinities. Not denormal
  // inputs: oneDNN's reorder flushes those to zero, to_bf16 rounds them like any other float.
  std::vector<float> x = random_floats(4096, 25, -1e3f, 1e3f);
  for (const std::uint32_t b : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x3fffffffu, 0x00800000u, 0x7f7fffffu,
                                0xff7f8000u, 0x7f800000u, 0xff800000u, 0x80000000u, 0x0u}) {
    float value;
    std::memcpy(&value, &b, sizeof value);
    x.push_back(value);
  }
  std::vector<std::uint16_t> ours(x.size());
  fused::to_bf16(x.data(), static_cast<std::int64_t>(x.size()), ours.data());
  OneDnnContext ctx(1);
  const dnnl::memory::dims dims = {static_cast<dnnl::memory::dim>(x.size())};
  dnnl::memory from = wrap(ctx, dims, x.data());
  const dnnl::memory theirs = reorder_into(ctx, from, plain_desc(dims, dnnl::memory::data_type::bf16));
  const auto* expected = static_cast<const std::uint16_t*>(theirs.get_data_handle());
  // Where oneDNN has no bf16 matmul (2.6 below AVX-512), its reorder also turns -0 into +0.
  const bool keeps_minus_zero = onednn_has_bf16_matmul();
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!keeps_minus_zero && x[i] == 0.f && std::signbit(x[i])) {
      EXPECT_EQ(expected[i], 0u);
      continue;
    }
    ASSERT_EQ(ours[i], expected[i]) << "x = " << x[i] << " (" << i << ")";
  }
  // A NaN stays a NaN.
  const float nan = std::nanf("");
  std::uint16_t nan_bits = 0;
  fused::to_bf16(&nan, 1, &nan_bits);
  EXPECT_TRUE(std::isnan(fused::load(&nan_bits, 0)));
}

// Widths around the loops' blocks of 8 and 16: tails alone (1, 3), one vector (8), whole
// blocks (16, 64), blocks and a tail (17, 33, 100, 130), blocks, a vector and a tail (29), and
// blocks and a vector (1000).
INSTANTIATE_TEST_SUITE_P(Widths, FusedRows, ::testing::Values(1, 3, 8, 16, 17, 29, 33, 64, 100, 130, 1000),
                         [](const auto& info) {
                           std::ostringstream name;
                           name << "w" << info.param;
                           return name.str();
                         });

}  // namespace
}  // namespace attnbench
