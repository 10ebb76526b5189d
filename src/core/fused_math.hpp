// Float math for the fused kernels, inlined into their SIMD loops. Branch-free on purpose:
// any float select (a ? b : c) lets GCC sink the arithmetic of one arm into a branch, which
// only AVX-512's masked instructions can vectorize; so clamps are integer min on the bits
// and selects are bit masks.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace attnbench::fused {

[[gnu::always_inline]] inline std::uint32_t float_bits(float x) { return std::bit_cast<std::uint32_t>(x); }
[[gnu::always_inline]] inline float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

// Returns all ones when a < b, else 0; a and b below 2^31 (e.g. the bits of |x|).
[[gnu::always_inline]] inline std::uint32_t mask_if_less(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(a - b) >> 31);
}

// exp_parts' constants (fused_avx2's tanh shares the first two): y log2(e) + kExpRound holds
// round(y log2(e)) in its low bits (1.5 * 2^23); ln2 = kLn2High + kLn2Low; Cephes expf's P,
// highest power first.
inline constexpr float kExpRound = 12582912.f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2High = 0.693359375f;
inline constexpr float kLn2Low = -2.12194440e-4f;
inline constexpr float kExpP[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                  4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

// fused_avx2's tanh: ln2 rounded to f32 (1.9e-9 above it), for its range reduction in one
// step (that error reaches expm1(y) as at most 2^n |n| 1.9e-9, below 1e-9 for every n <= 0);
// and its expm1(r) = r + r^2 P(r) for |r| <= ln2 / 2, P of degree 4, highest power first,
// fitted near-minimax (iteratively reweighted least squares on Chebyshev nodes): within
// 4.4e-9 absolute of expm1 with these f32 coefficients, where exp's last bits need Cephes'
// degree 5.
inline constexpr float kLn2 = 0.693147180559945309f;
inline constexpr float kExpm1P[] = {1.3950602151453495e-3f, 8.368953131139278e-3f, 4.166620597243309e-2f,
                                    1.66665181517601e-1f, 0.5f};

// y = n ln2 + r for y in [-87.33, 0] (ln2 in two parts): 2^n, built in the exponent bits,
// and expm1(r) = r + r^2 P(r) with Cephes expf's P (whose exp(r) is 1 + expm1(r)).
struct ExpParts {
  float two_to_n, expm1_r;
};
[[gnu::always_inline]] inline ExpParts exp_parts(float y) {
  const float shifted = y * kLog2e + kExpRound;
  const float n = shifted - kExpRound;
  float r = y - n * kLn2High;
  r = r - n * kLn2Low;
  float p = kExpP[0];
#pragma GCC unroll 8  // unrolled at any -O level: the SIMD loops that inline this vectorize straight code only
  for (std::size_t c = 1; c < std::size(kExpP); ++c) p = p * r + kExpP[c];
  return {from_bits((float_bits(shifted) - float_bits(kExpRound) + 127u) << 23), (r * r) * p + r};
}

// Returns expm1(y) = exp(y) - 1 for y in [-18, 0], without cancellation near 0:
// 2^n expm1(r) + (2^n - 1).
[[gnu::always_inline]] inline float expm1_nonpositive(float y) {
  const ExpParts parts = exp_parts(y);
  return parts.two_to_n * parts.expm1_r + (parts.two_to_n - 1.f);
}

// Returns exp(y) for y <= 0 (a softmax's logit minus the row's largest; y > 0 is outside
// the contract): 2^n expm1(r) + 2^n, within 2 ulp of exp for -87.33 < y <= 0
// (tests/fused_kernels_test.cpp checks), exactly 1 at ±0, 0 for y <= -87.33 (exp(-87.33) is
// 1.18e-38, about 2^-126: an absolute error below that), NaN for NaN.
[[gnu::always_inline]] inline float exp_nonpositive(float y) {
  constexpr float kLowest = -87.33f;
  const std::uint32_t magnitude = float_bits(y) & 0x7fffffffu;
  const std::uint32_t keep = mask_if_less(magnitude, float_bits(-kLowest));
  const std::uint32_t is_nan = mask_if_less(0x7f800000u, magnitude);
  const float clamped = from_bits(std::min(float_bits(y), float_bits(kLowest)));  // y < 0: bits grow with |y|
  const ExpParts parts = exp_parts(clamped);
  return from_bits((float_bits(parts.two_to_n * parts.expm1_r + parts.two_to_n) & keep) | (float_bits(y) & is_nan));
}

// Returns n / d for d in [1, 2] with multiply-adds only (no divide instruction, whose
// latency and throughput bound a tanh-heavy loop): r = 24/17 - 8/17 d is 1/d within
// 1/17 relative, two Newton steps r += r (1 - d r) bring that to (1/17)^4 = 1.2e-5, and
// Markstein's correction q = n r + r (n - d n r) to about 1e-10 plus the roundings,
// i.e. within one ulp of n / d (0.5 ulp where the compiler contracts to FMA).
[[gnu::always_inline]] inline float divide_by_one_to_two(float n, float d) {
  float r = 24.f / 17.f - (8.f / 17.f) * d;
  r = r + r * (1.f - d * r);
  r = r + r * (1.f - d * r);
  const float q = n * r;
  return q + r * (n - d * q);
}

// fast_tanh's clamp: tanh(9) rounds to 1.
inline constexpr float kFastTanhClamp = 9.f;

// The tanh of the fused kernels' portable clones, run on CPUs without AVX2 (AVX-512 CPUs run
// fused_avx512.hpp's, AVX2 CPUs fused_avx2.hpp's: this form on a shorter chain, with vrcpps
// for the quotient). Returns tanh(x) within 1.5e-7 absolute and 1.8e-7
// relative error for every float x where multiply-adds contract to FMA (the AVX2 clone),
// 1.8e-7 and 2.3e-7 without FMA (measured on all floats; tests/fused_kernels_test.cpp
// checks); ±inf gives ±1, NaN gives NaN. One path for all x and no division: with
// u = expm1(-2 min(|x|, 9)), tanh(|x|) = -u / (2 + u) (beyond 9 it rounds to 1), the
// quotient by divide_by_one_to_two (2 + u is in (1, 2]), then the sign of x.
[[gnu::always_inline]] inline float fast_tanh(float x) {
  const std::uint32_t sign = float_bits(x) & 0x80000000u;
  const std::uint32_t magnitude = float_bits(x) ^ sign;
  const std::uint32_t is_nan = mask_if_less(0x7f800000u, magnitude);
  const float clamped = from_bits(std::min(magnitude, float_bits(kFastTanhClamp)) | (magnitude & is_nan));
  const float u = expm1_nonpositive(-2.f * clamped);  // in (-1, 0]
  const float tanh_of_magnitude = divide_by_one_to_two(-u, 2.f + u);
  return from_bits((float_bits(tanh_of_magnitude) & 0x7fffffffu) | sign);
}

// Loads element i of f32 rows, or of bf16 rows (stored as their upper 16 bits: a shift
// gives the f32 exactly, on any CPU).
[[gnu::always_inline]] inline float load(const float* p, std::int64_t i) { return p[i]; }
[[gnu::always_inline]] inline float load(const std::uint16_t* p, std::int64_t i) {
  return from_bits(static_cast<std::uint32_t>(p[i]) << 16);
}

// Returns x rounded to bf16 (nearest, ties to even, as oneDNN's reorder rounds normal
// floats; denormals are rounded too, where oneDNN flushes them to 0), as its 16 bits; a
// NaN stays a (quiet) NaN, ±inf stays ±inf.
[[gnu::always_inline]] inline std::uint16_t to_bf16_bits(float x) {
  const std::uint32_t bits = float_bits(x);
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const std::uint32_t is_nan = mask_if_less(0x7f800000u, bits & 0x7fffffffu);
  return static_cast<std::uint16_t>((rounded & ~is_nan) | (((bits >> 16) | 0x40u) & is_nan));
}

}  // namespace attnbench::fused
