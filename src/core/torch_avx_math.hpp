// Scalar, lane-by-lane ports of log256_ps and sincos256_ps from PyTorch's
// aten/src/ATen/native/cpu/avx_mathfun.h, the functions torch.randn's AVX2 kernel
// (normal_fill_16_AVX2) uses instead of std::log / std::sin / std::cos.
//
// The float operations are those of Debian's libtorch_cpu 1.13.1 (GCC 12.2, -O2
// -mavx2 -mfma) as found by disassembling its normal_fill_AVX2: the compiler
// contracted most of the source's separate _mm256_mul_ps / _mm256_add_ps pairs into
// FMAs. Each std::fma below stands for one of those vfmadd / vfnmadd / vfmsub
// instructions, and each plain * + - for a vmulps / vaddps / vsubps, in the same
// order. (Computing the source's operations unfused instead differs from that
// torch in about 1% of randn values.) No plain product below feeds a plain + or -,
// so our own compiler has nothing left to contract, whatever -ffp-contract or
// -march it is given; keep it that way when editing.
//
// Original algorithm and constants:
/*
   AVX implementation of sin, cos, sincos, exp and log

   Based on "sse_mathfun.h", by Julien Pommier
   http://gruntthepeon.free.fr/ssemath/

   Copyright (C) 2012 Giovanni Garberoglio
   Interdisciplinary Laboratory for Computational Science (LISC)
   Fondazione Bruno Kessler and University of Trento
   via Sommarive, 18
   I-38123 Trento (Italy)

  This software is provided 'as-is', without any express or implied
  warranty.  In no event will the authors be held liable for any damages
  arising from the use of this software.

  Permission is granted to anyone to use this software for any purpose,
  including commercial applications, and to alter it and redistribute it
  freely, subject to the following restrictions:

  1. The origin of this software must not be misrepresented; you must not
     claim that you wrote the original software. If you use this software
     in a product, an acknowledgment in the product documentation would be
     appreciated but is not required.
  2. Altered source versions must be plainly marked as such, and must not be
     misrepresented as being the original software.
  3. This notice may not be removed or altered from any source distribution.

  (this is the zlib license)
*/
// Altered source version: rewritten by the attnbench authors as scalar C++20 that
// computes one lane, with the FMA contractions of PyTorch's build made explicit.
// The polynomial coefficients are Cephes' (Stephen L. Moshier) logf / sinf / cosf.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace attnbench::torch_avx {

// log256_ps for one lane: natural logarithm, NaN (all bits set) for x <= 0.
inline float log256(float x) {
  constexpr float kMinNormPos = std::bit_cast<float>(std::uint32_t{0x00800000});
  constexpr std::uint32_t kInvMantMask = ~std::uint32_t{0x7f800000};
  constexpr float kSqrtHf = static_cast<float>(0.707106781186547524);
  constexpr float kP[9] = {static_cast<float>(7.0376836292E-2),  static_cast<float>(-1.1514610310E-1),
                           static_cast<float>(1.1676998740E-1),  static_cast<float>(-1.2420140846E-1),
                           static_cast<float>(1.4249322787E-1),  static_cast<float>(-1.6668057665E-1),
                           static_cast<float>(2.0000714765E-1),  static_cast<float>(-2.4999993993E-1),
                           static_cast<float>(3.3333331174E-1)};
  constexpr float kQ1 = static_cast<float>(-2.12194440e-4);
  constexpr float kQ2 = 0.693359375f;

  const bool invalid = x <= 0.0f;                // _mm256_cmp_ps(x, 0, _CMP_LE_OS)
  x = x > kMinNormPos ? x : kMinNormPos;         // _mm256_max_ps(x, min_norm_pos)
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const auto exponent = static_cast<std::int32_t>(bits >> 23) - 0x7f;
  x = std::bit_cast<float>((bits & kInvMantMask) | std::bit_cast<std::uint32_t>(0.5f));  // mantissa in [0.5, 1)
  float e = static_cast<float>(exponent) + 1.0f;

  // if (x < SQRTHF) { e -= 1; x = x + x - 1; } else { x = x - 1; }
  const bool below = x < kSqrtHf;
  const float tmp = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + tmp;

  const float z = x * x;
  float y = kP[0];
  for (int k = 1; k < 9; ++k) y = std::fma(y, x, kP[k]);
  y = y * x;
  y = std::fma(y, z, e * kQ1);  // y * z + e * q1
  y = std::fma(-z, 0.5f, y);    // y - z * 0.5
  x = x + y;
  x = std::fma(e, kQ2, x);      // x + e * q2
  return invalid ? std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) | 0xFFFFFFFFu) : x;
}

// sincos256_ps for one lane: sin(x) and cos(x), accurate for |x| < 8192.
inline void sincos256(float x, float& sin_x, float& cos_x) {
  constexpr std::uint32_t kSignMask = 0x80000000u;
  constexpr float kFourOverPi = static_cast<float>(1.27323954473516);
  constexpr float kMinusDp1 = -0.78515625f;
  constexpr float kMinusDp2 = -2.4187564849853515625e-4f;
  constexpr float kMinusDp3 = static_cast<float>(-3.77489497744594108e-8);
  constexpr float kSinCof[3] = {static_cast<float>(-1.9515295891E-4), static_cast<float>(8.3321608736E-3),
                                static_cast<float>(-1.6666654611E-1)};
  constexpr float kCosCof[3] = {static_cast<float>(2.443315711809948E-005),
                                static_cast<float>(-1.388731625493765E-003),
                                static_cast<float>(4.166664568298827E-002)};

  const std::uint32_t xbits = std::bit_cast<std::uint32_t>(x);
  std::uint32_t sign_bit_sin = xbits & kSignMask;
  x = std::bit_cast<float>(xbits & ~kSignMask);  // |x|

  // j = ((int)(x * 4/pi) + 1) & ~1, the octant; _mm256_cvttps_epi32 gives INT_MIN out of range.
  float y = x * kFourOverPi;
  std::uint32_t j = y < 2147483648.0f ? static_cast<std::uint32_t>(static_cast<std::int32_t>(y)) : kSignMask;
  j = (j + 1) & ~std::uint32_t{1};
  y = static_cast<float>(static_cast<std::int32_t>(j));

  const std::uint32_t swap_sign_bit_sin = (j & 4) << 29;
  const bool poly_mask = (j & 2) == 0;  // true: the sine polynomial gives sin

  // Extended precision modular arithmetic: x = ((x - y * DP1) - y * DP2) - y * DP3.
  x = std::fma(y, kMinusDp1, x);
  x = std::fma(y, kMinusDp2, x);
  x = std::fma(y, kMinusDp3, x);

  const std::uint32_t sign_bit_cos = (~(j - 2) & 4) << 29;
  sign_bit_sin ^= swap_sign_bit_sin;

  // Cosine polynomial (0 <= x <= pi/4).
  const float z = x * x;
  float yc = kCosCof[0];
  yc = std::fma(yc, z, kCosCof[1]);
  yc = std::fma(yc, z, kCosCof[2]);
  yc = yc * z;
  const float half_z = z * 0.5f;
  yc = std::fma(yc, z, -half_z);  // yc * z - z * 0.5
  yc = yc + 1.0f;

  // Sine polynomial.
  float ys = kSinCof[0];
  ys = std::fma(ys, z, kSinCof[1]);
  ys = std::fma(ys, z, kSinCof[2]);
  ys = ys * z;
  ys = std::fma(ys, x, x);  // ys * x + x

  // Select per polynomial mask; the subtractions and additions are the original's.
  const float ysin2 = poly_mask ? ys : 0.0f;
  const float ysin1 = poly_mask ? 0.0f : yc;
  ys = ys - ysin2;
  yc = yc - ysin1;
  sin_x = std::bit_cast<float>(std::bit_cast<std::uint32_t>(ysin1 + ysin2) ^ sign_bit_sin);
  cos_x = std::bit_cast<float>(std::bit_cast<std::uint32_t>(yc + ys) ^ sign_bit_cos);
}

}  // namespace attnbench::torch_avx
