#include "core/fused_avx512.hpp"

#if ATTNBENCH_X86_LOOPS
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports wrongly (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <bit>
#include <type_traits>

#include "core/fused_math.hpp"
#include "core/fused_prefetch.hpp"
#include "core/tanh_table.hpp"

// Every function here is compiled for x86-64-v4 and only called where available(); lambdas
// do not inherit a function's target, so they carry it (and always_inline) themselves.
#define ATTNBENCH_AVX512 __attribute__((target("arch=x86-64-v4")))
#define ATTNBENCH_AVX512_LAMBDA __attribute__((target("arch=x86-64-v4"), always_inline))

namespace attnbench::fused::avx512 {

namespace {

static_assert(kTanhIntervals == 32, "vpermt2ps picks from 2 x 16 coefficients");

// The largest float below kTanhClamp: |x| is clamped to it, so that the last interval holds.
constexpr float kLastBelowClamp = std::bit_cast<float>(std::bit_cast<std::uint32_t>(kTanhClamp) - 1);
// |x| + kRoundToCentre, rounded to nearest, is |x| rounded to a multiple of kTanhWidth (the
// float's ulp there) plus kRoundToCentre, the multiple's index in the low mantissa bits.
constexpr float kRoundToCentre = kTanhWidth * (1 << 23);
static_assert(kRoundToCentre == 2097152.f, "kTanhWidth is a power of 2: 0.25");
constexpr float kLastCentre = kTanhWidth * (kTanhIntervals - 1);

// Coefficient c of intervals 0-15 in low[c], of intervals 16-31 in high[c].
struct Coefficients {
  __m512 low[kTanhDegree + 1], high[kTanhDegree + 1];
};

ATTNBENCH_AVX512 [[gnu::always_inline]] inline Coefficients load_coefficients() {
  Coefficients table;
  for (int c = 0; c <= kTanhDegree; ++c) {
    table.low[c] = _mm512_load_ps(kTanhPoly[c]);
    table.high[c] = _mm512_load_ps(kTanhPoly[c] + 16);
  }
  return table;
}

// Replaces each lane of the N vectors x[i] by its tanh (the header states its error), under
// the default rounding mode, each phase for all N vectors before the next. The interval and
// t come from adds and mins: on Zen 4 the FMA pipes also run vpermt2ps and are the bound (a
// multiply there cost as much as a permute).
template <int N>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void tanh16(__m512 (&x)[N], const Coefficients& table) {
  const __m512 sign_bit = _mm512_set1_ps(-0.f);
  __m512 clamped[N], rounded[N], t[N], p[N];
  // vminps returns its second operand when either is NaN: a NaN stays a NaN through the
  // clamps, so t and the polynomial are NaN (the index its bits pick does not matter).
  for (int i = 0; i < N; ++i) clamped[i] = _mm512_min_ps(_mm512_set1_ps(kLastBelowClamp), _mm512_andnot_ps(sign_bit, x[i]));
  for (int i = 0; i < N; ++i)
    rounded[i] = _mm512_min_ps(_mm512_set1_ps(kRoundToCentre + kLastCentre),
                               _mm512_add_ps(clamped[i], _mm512_set1_ps(kRoundToCentre)));
  // Exact: the centre is a multiple of kTanhWidth below 8, and clamped is within 1.75 of it.
  for (int i = 0; i < N; ++i) t[i] = _mm512_sub_ps(clamped[i], _mm512_sub_ps(rounded[i], _mm512_set1_ps(kRoundToCentre)));
  // vpermt2ps reads the interval's index from the low 5 bits of rounded.
  const auto coefficient = [&](int c, int i) ATTNBENCH_AVX512_LAMBDA {
    return _mm512_permutex2var_ps(table.low[c], _mm512_castps_si512(rounded[i]), table.high[c]);
  };
  for (int i = 0; i < N; ++i) p[i] = coefficient(kTanhDegree, i);
  for (int c = kTanhDegree - 1; c >= 0; --c)
    for (int i = 0; i < N; ++i) p[i] = _mm512_fmadd_ps(p[i], t[i], coefficient(c, i));
  for (int i = 0; i < N; ++i) x[i] = _mm512_or_ps(p[i], _mm512_and_ps(sign_bit, x[i]));
}

// tanh of each lane of x, one vector.
ATTNBENCH_AVX512 [[gnu::always_inline]] inline __m512 tanh16(__m512 x, const Coefficients& table) {
  __m512 one[1] = {x};
  tanh16(one, table);
  return one[0];
}

constexpr __mmask16 kAllLanes = 0xffff;

// The first min(count, 16) lanes of a vector; count > 0.
constexpr __mmask16 first_lanes(std::int64_t count) {
  return count >= 16 ? kAllLanes : static_cast<__mmask16>((1u << count) - 1u);
}

// The lanes of vector i of N: all of them but in vector N - 1, whose lanes are `last`.
template <int N>
constexpr __mmask16 lanes_of(int i, __mmask16 last) {
  return i == N - 1 ? last : kAllLanes;
}

// Calls step(k, lanes) for the 16-float vectors of a row of `width` floats: whole vectors
// (all lanes: plain loads), then the tail (the lanes that remain; masked loads give 0 beyond).
template <class Step>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void over_vectors(std::int64_t width, Step step) {
  std::int64_t k = 0;
  for (; k + 16 <= width; k += 16) step(k, kAllLanes);
  if (k < width) step(k, first_lanes(width - k));
}

// 16 elements of f32 or bf16 rows as f32, the lanes outside `m` 0.
ATTNBENCH_AVX512 [[gnu::always_inline]] inline __m512 load16(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
ATTNBENCH_AVX512 [[gnu::always_inline]] inline __m512 load16(const std::uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

// Writes out[j] = the sum over k of the terms of row j for j < n, rows (n, width): one row
// after the other, each in blocks of 64 elements on four accumulators (four independent
// chains), which term gets two at a time (`front`: the block's first 32 elements, `back`: the
// last 32), then its tail on the first accumulator, one vector at a time. term(acc, row, k,
// last), for N = 2 and N = 1 accumulators acc[N], adds to acc[i] the 16 terms from row + k +
// 16 i, in the lanes lanes_of<N>(i, last) (term must add 0 in the others). N = 2 lets term
// interleave two vectors' work: with tanh16 of two vectors, 0.90x the time a term of one at
// a time on a Zen 5, 0.94x on a Zen 4 (README "Fused algorithms").
// Before each block: ahead.request() of the block's bytes and one along.step() (a tail is a
// block), so `along` must have been made with n * ceil(width / 64) steps.
template <class Row, class Term>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void sum_rows(const Row* rows, std::int64_t n, std::int64_t width,
                                                             float* out, const StreamPrefetch& ahead,
                                                             SpreadPrefetch& along, Term term) {
  for (std::int64_t j = 0; j < n; ++j) {
    const Row* row = rows + j * width;
    __m512 front[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()}, back[2] = {front[0], front[0]};
    std::int64_t k = 0;
    for (; k + 64 <= width; k += 64) {
      ahead.request(row + k, 64 * static_cast<std::int64_t>(sizeof(Row)));
      along.step();
      term(front, row, k, kAllLanes);
      term(back, row, k + 32, kAllLanes);
    }
    if (k < width) {
      ahead.request(row + k, (width - k) * static_cast<std::int64_t>(sizeof(Row)));
      along.step();
      __m512 first[1] = {front[0]};
      for (; k < width; k += 16) term(first, row, k, first_lanes(width - k));
      front[0] = first[0];
    }
    out[j] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(front[0], front[1]), _mm512_add_ps(back[0], back[1])));
  }
}

// The steps sum_rows takes over n rows of `width`: one a block of 64 elements or a tail.
constexpr std::int64_t blocks_of(std::int64_t n, std::int64_t width) { return n * ((width + 63) / 64); }

// out[j] = rows[j, :] . x, nothing prefetched: measured on a 2-core AMD EPYC (Zen 4),
// against four rows interleaved, at the paper's sizes on 1 / 2 threads the step of dot
// 0.87 / 0.96 (bf16 0.79 / 0.80) and general 0.86 / 0.98 (bf16 0.61 / 0.57) of the time
// before (README, "Fused algorithms"); with a prefetch 1.03 to 1.16 times slower.
template <class Row>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void dot_rows_of(const Row* rows, const float* x, std::int64_t n,
                                                                std::int64_t width, float* out) {
  SpreadPrefetch nothing({}, 0);
  sum_rows(rows, n, width, out, StreamPrefetch(rows, 0), nothing,
           [&]<int N>(__m512(&acc)[N], const Row* row, std::int64_t k, __mmask16 last) ATTNBENCH_AVX512_LAMBDA {
             for (int i = 0; i < N; ++i) {
               const __mmask16 m = lanes_of<N>(i, last);
               acc[i] = _mm512_fmadd_ps(load16(row + k + 16 * i, m), _mm512_maskz_loadu_ps(m, x + k + 16 * i), acc[i]);
             }
           });
}

// out[j] = v . tanh(rows[j, :] + x); the lanes past the row's end add tanh(0) * 0. The loop
// is bound by the tanh, and the hardware prefetcher alone left it waiting on DRAM at the
// paper's sizes (B80 L50 A1000: keys of 16 MB; measured on 2-core AMD EPYC VMs, Zen 5 and
// Zen 4), so it prefetches its stream within the `readable` rows (StreamPrefetch), and
// `next_pass` spread over the blocks (SpreadPrefetch), whose memory traffic then overlaps
// the tanh.
template <class Row>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void tanh_dot_rows_of(const Row* rows, const float* x, const float* v,
                                                                     std::int64_t n, std::int64_t width, float* out,
                                                                     std::int64_t readable, PrefetchAlong next_pass) {
  const Coefficients table = load_coefficients();
  SpreadPrefetch along(next_pass, blocks_of(n, width));
  sum_rows(rows, n, width, out, StreamPrefetch(rows, readable * width * static_cast<std::int64_t>(sizeof(Row))), along,
           [&]<int N>(__m512(&acc)[N], const Row* row, std::int64_t k, __mmask16 last) ATTNBENCH_AVX512_LAMBDA {
             __m512 z[N];
             for (int i = 0; i < N; ++i) {
               const __mmask16 m = lanes_of<N>(i, last);
               z[i] = _mm512_add_ps(load16(row + k + 16 * i, m), _mm512_maskz_loadu_ps(m, x + k + 16 * i));
             }
             tanh16(z, table);
             for (int i = 0; i < N; ++i)
               acc[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(lanes_of<N>(i, last), v + k + 16 * i), z[i], acc[i]);
           });
}

// 32 bf16 elements loaded as 16 pairs (one 32-bit word each) as two f32 vectors: the word
// shifted up 16 is element 2m's f32 (even_elements), the word with its low half cleared
// element 2m + 1's (odd_elements). 2 operations for 32 elements, where widening takes 2
// (vpmovzxwd and a shift) for 16; the values are those of load16, exactly.
ATTNBENCH_AVX512 [[gnu::always_inline]] inline __m512 even_elements(__m512i pairs) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16));
}
ATTNBENCH_AVX512 [[gnu::always_inline]] inline __m512 odd_elements(__m512i pairs) {
  return _mm512_castsi512_ps(_mm512_and_si512(pairs, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}
// Stores the even and the odd elements of 32 in order at out.
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void store_in_order(float* out, __m512 even, __m512 odd) {
  const __m512i first_half = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second_half = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  _mm512_storeu_ps(out, _mm512_permutex2var_ps(even, first_half, odd));
  _mm512_storeu_ps(out + 16, _mm512_permutex2var_ps(even, second_half, odd));
}

// weighted_sum_block of bf16 rows for an even V, every lane: the rows as pairs (even_elements,
// odd_elements), each element with the same chain of multiply-adds as through load16, so the
// sums are the same bit for bit, put in order at the end.
// On a 2-core AMD EPYC (Zen 4), 2026-12-07, the mid size's bf16 step (B32 L50 E512) took
// 0.77x to 0.84x the time of widening for location, dot, scaled_dot and general, 0.94x to
// 0.97x for additive and mlp (4 ABBA rounds, 1 and 2 threads; README "Fused algorithms").
template <int V>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void weighted_sum_pairs(const float* w, const std::uint16_t* rows,
                                                                       std::int64_t n, std::int64_t width,
                                                                       std::int64_t k, float* out) {
  static_assert(V % 2 == 0, "a load holds two vectors' elements");
  constexpr int kLoads = V / 2;
  __m512 even[kLoads], odd[kLoads];
  for (int i = 0; i < kLoads; ++i) even[i] = odd[i] = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < n; ++j) {
    const __m512 weight = _mm512_set1_ps(w[j]);
    const std::uint16_t* row = rows + j * width + k;
    for (int i = 0; i < kLoads; ++i) {
      const __m512i pairs = _mm512_loadu_si512(row + 32 * i);
      even[i] = _mm512_fmadd_ps(weight, even_elements(pairs), even[i]);
      odd[i] = _mm512_fmadd_ps(weight, odd_elements(pairs), odd[i]);
    }
  }
  for (int i = 0; i < kLoads; ++i) store_in_order(out + k + 32 * i, even[i], odd[i]);
}

// Sums w[j] rows[j, k..k + 16 V) over j < n into V accumulators (each lane
// fma(w[n-1], ., ... fma(w[0], ., 0))) and writes them to out + k; the last vector takes the
// lanes of `last` only (the others are neither read nor written).
template <int V, class Row>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void weighted_sum_block(const float* w, const Row* rows, std::int64_t n,
                                                                       std::int64_t width, std::int64_t k,
                                                                       __mmask16 last, float* out) {
  if constexpr (std::is_same_v<Row, std::uint16_t> && V % 2 == 0) {
    if (last == kAllLanes) return weighted_sum_pairs<V>(w, rows, n, width, k, out);
  }
  __m512 acc[V];
  for (int i = 0; i < V; ++i) acc[i] = _mm512_setzero_ps();
  for (std::int64_t j = 0; j < n; ++j) {
    const __m512 weight = _mm512_set1_ps(w[j]);
    const Row* row = rows + j * width + k;
    for (int i = 0; i < V; ++i) acc[i] = _mm512_fmadd_ps(weight, load16(row + 16 * i, lanes_of<V>(i, last)), acc[i]);
  }
  for (int i = 0; i < V; ++i) _mm512_mask_storeu_ps(out + k + 16 * i, lanes_of<V>(i, last), acc[i]);
}

// The blocks weighted_sum_rows_of takes along a row of `width`: of 16 vectors, then of 4, then
// single ones; calls block(V, k, last lanes) for each.
template <class Block>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void over_sum_blocks(std::int64_t width, Block block) {
  std::int64_t k = 0;
  for (; k + 256 <= width; k += 256) block(std::integral_constant<int, 16>{}, k, kAllLanes);
  for (; k + 64 <= width; k += 64) block(std::integral_constant<int, 4>{}, k, kAllLanes);
  for (; k < width; k += 16) block(std::integral_constant<int, 1>{}, k, first_lanes(width - k));
}

// out = sum_j w[j] rows[j, :] for rows in the caches: along the row in blocks of up to 16
// vectors, each summed over all n rows in registers, so that out is written once (the 4-row
// clones load and store it every 4 rows). Measured in a scratch program on the Intel Xeon of
// fused_projection.hpp (2026-12-04), 1 thread, rows in its L2 (16 examples of 50 x 512): f32
// 0.80 to 0.88, bf16 0.71 of the clones' time. Not for rows from DRAM or the L3: there (40
// examples of 50 x 2000 from the L3) it took 1.05 of their time, and in the paper's steps
// this loop, or one row at a time, 1.02 to 1.5 (weighted_sum_rows_streamed keeps four rows
// at a time).
template <class Row>
ATTNBENCH_AVX512 [[gnu::always_inline]] inline void weighted_sum_rows_of(const float* w, const Row* rows,
                                                                         std::int64_t n, std::int64_t width,
                                                                         float* out) {
  over_sum_blocks(width, [&](auto vectors, std::int64_t k, __mmask16 last) ATTNBENCH_AVX512_LAMBDA {
    weighted_sum_block<decltype(vectors)::value>(w, rows, n, width, k, last, out);
  });
}

}  // namespace

bool available() {
  static const bool yes = __builtin_cpu_supports("x86-64-v4");
  return yes;
}

ATTNBENCH_AVX512
void dot_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  dot_rows_of(rows, x, n, width, out);
}

ATTNBENCH_AVX512
void dot_rows(const std::uint16_t* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  dot_rows_of(rows, x, n, width, out);
}

ATTNBENCH_AVX512
void tanh_dot_rows(const float* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass) {
  tanh_dot_rows_of(rows, x, v, n, width, out, readable, next_pass);
}

ATTNBENCH_AVX512
void tanh_dot_rows(const std::uint16_t* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass) {
  tanh_dot_rows_of(rows, x, v, n, width, out, readable, next_pass);
}

ATTNBENCH_AVX512
void weighted_sum_rows(const float* w, const float* rows, std::int64_t n, std::int64_t width, float* out) {
  weighted_sum_rows_of(w, rows, n, width, out);
}

ATTNBENCH_AVX512
void weighted_sum_rows(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width, float* out) {
  weighted_sum_rows_of(w, rows, n, width, out);
}

// Four rows at a time like the clones (BlockPrefetch's block of the `readable` rows ahead, a
// line of each of its rows per line of its own; out loaded and stored once per four rows),
// each element out + fma(w3, r3, fma(w2, r2, fma(w1, r1, w0 r0))) (GCC's clones contract the
// same sum otherwise: the last bits differ), the rows' whole 32-element chunks as pairs:
// out holds each chunk's even elements before its odd ones until all rows are summed, then
// store_in_order; the last width % 32 elements are widened 16 at a time (load16).
ATTNBENCH_AVX512
void weighted_sum_rows_streamed(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width,
                                float* out, std::int64_t readable) {
  const std::int64_t paired = width / 32 * 32;
  std::fill(out, out + width, 0.f);
  const BlockPrefetch ahead(rows, width * 2, readable);
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const std::uint16_t* r = rows + j * width;
    const __m512 w0 = _mm512_set1_ps(w[j]), w1 = _mm512_set1_ps(w[j + 1]), w2 = _mm512_set1_ps(w[j + 2]),
                 w3 = _mm512_set1_ps(w[j + 3]);
    // w0 load(r) + ... + w3 load(r + 3 width), load(row) giving 16 of a row's elements as f32.
    const auto four_rows = [&](auto load) ATTNBENCH_AVX512_LAMBDA {
      __m512 sum = _mm512_mul_ps(w0, load(r));
      sum = _mm512_fmadd_ps(w1, load(r + width), sum);
      sum = _mm512_fmadd_ps(w2, load(r + 2 * width), sum);
      return _mm512_fmadd_ps(w3, load(r + 3 * width), sum);
    };
    const char* next = ahead.of(j);
    for (std::int64_t k = 0; k < paired; k += 32) {
      if (next)
        for (int row = 0; row < 4; ++row) _mm_prefetch(next + k * 2 + row * ahead.row_bytes(), _MM_HINT_T0);
      const __m512 even = four_rows([k](const std::uint16_t* row) ATTNBENCH_AVX512_LAMBDA {
        return even_elements(_mm512_loadu_si512(row + k));
      });
      const __m512 odd = four_rows([k](const std::uint16_t* row) ATTNBENCH_AVX512_LAMBDA {
        return odd_elements(_mm512_loadu_si512(row + k));
      });
      _mm512_storeu_ps(out + k, _mm512_add_ps(_mm512_loadu_ps(out + k), even));
      _mm512_storeu_ps(out + k + 16, _mm512_add_ps(_mm512_loadu_ps(out + k + 16), odd));
    }
    for (std::int64_t k = paired; k < width; k += 16) {
      const __mmask16 m = first_lanes(width - k);
      const __m512 sum =
          four_rows([k, m](const std::uint16_t* row) ATTNBENCH_AVX512_LAMBDA { return load16(row + k, m); });
      _mm512_mask_storeu_ps(out + k, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, out + k), sum));
    }
  }
  for (; j < n; ++j) {
    const std::uint16_t* row = rows + j * width;
    const __m512 weight = _mm512_set1_ps(w[j]);
    for (std::int64_t k = 0; k < paired; k += 32) {
      const __m512i pairs = _mm512_loadu_si512(row + k);
      _mm512_storeu_ps(out + k, _mm512_fmadd_ps(weight, even_elements(pairs), _mm512_loadu_ps(out + k)));
      _mm512_storeu_ps(out + k + 16, _mm512_fmadd_ps(weight, odd_elements(pairs), _mm512_loadu_ps(out + k + 16)));
    }
    for (std::int64_t k = paired; k < width; k += 16) {
      const __mmask16 m = first_lanes(width - k);
      _mm512_mask_storeu_ps(out + k, m, _mm512_fmadd_ps(weight, load16(row + k, m), _mm512_maskz_loadu_ps(m, out + k)));
    }
  }
  for (std::int64_t k = 0; k < paired; k += 32)
    store_in_order(out + k, _mm512_loadu_ps(out + k), _mm512_loadu_ps(out + k + 16));
}

ATTNBENCH_AVX512
void add_tanh_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  const Coefficients table = load_coefficients();
  for (std::int64_t j = 0; j < n; ++j)
    over_vectors(width, [&](std::int64_t k, __mmask16 m) ATTNBENCH_AVX512_LAMBDA {
      const __m512 z = _mm512_add_ps(_mm512_maskz_loadu_ps(m, rows + j * width + k), _mm512_maskz_loadu_ps(m, x + k));
      _mm512_mask_storeu_ps(out + j * width + k, m, tanh16(z, table));
    });
}

ATTNBENCH_AVX512
void tanh_all(const float* x, std::int64_t n, float* y) {
  const Coefficients table = load_coefficients();
  over_vectors(n, [&](std::int64_t i, __mmask16 m) ATTNBENCH_AVX512_LAMBDA {
    _mm512_mask_storeu_ps(y + i, m, tanh16(_mm512_maskz_loadu_ps(m, x + i), table));
  });
}

}  // namespace attnbench::fused::avx512
#endif
