#include "core/fused_avx2.hpp"

#if ATTNBENCH_X86_LOOPS
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <iterator>

#include "core/fused_math.hpp"
#include "core/fused_prefetch.hpp"

// Every function here is compiled for x86-64-v3 and only called where available(); lambdas
// do not inherit a function's target, so they carry it (and always_inline) themselves.
#define ATTNBENCH_AVX2 __attribute__((target("arch=x86-64-v3")))
#define ATTNBENCH_AVX2_LAMBDA __attribute__((target("arch=x86-64-v3"), always_inline))

namespace attnbench::fused::avx2 {

namespace {

// Two vectors, 16 floats: the block the loops below take at a time.
constexpr int kVectors = 2;
constexpr std::int64_t kBlock = 8 * kVectors;

// The tanh of a block of kVectors vectors in its two halves: tanh_start(x) returns u, 2 + u and
// the sign of each lane, tanh_finish(half) the tanh (the header states its error), under the
// default rounding mode, each phase for all vectors before the next. fast_tanh's
// u = expm1(-2 min(|x|, clamp)) and -u / (2 + u), with the operations on the dependency
// chain cut: n from |x| by -2 log2(e) (an exact scaling), r = y - n ln2 in one step (kLn2),
// kExpm1P's polynomial by Estrin's scheme, 2 + u straight from 2^n beside u, and the
// quotient's corrections beside its first product. The loops below start a block's tanh
// before they finish the block before it (tanh_blocks).
struct Vectors {
  __m256 lane[kVectors];
};
struct TanhHalf {
  Vectors u, d, sign;
};

ATTNBENCH_AVX2 [[gnu::always_inline]] inline TanhHalf tanh_start(const Vectors& x) {
  constexpr int N = kVectors;
  const __m256 sign_bit = _mm256_set1_ps(-0.f), round = _mm256_set1_ps(kExpRound), one = _mm256_set1_ps(1.f);
  __m256 a[N], shifted[N], r[N], r2[N], p[N];
  TanhHalf half;
  __m256 (&sign)[N] = half.sign.lane;
  __m256 (&u)[N] = half.u.lane;
  __m256 (&d)[N] = half.d.lane;
  // a = min(|x|, clamp); vminps returns its second operand when either is NaN: a NaN stays a
  // NaN through every step.
  for (int i = 0; i < N; ++i) {
    sign[i] = _mm256_and_ps(sign_bit, x.lane[i]);
    a[i] = _mm256_min_ps(_mm256_set1_ps(kFastTanhClamp), _mm256_andnot_ps(sign_bit, x.lane[i]));
  }
  // u = expm1(y), y = -2a, = 2^n expm1(r) + (2^n - 1), as expm1_nonpositive but for r.
  for (int i = 0; i < N; ++i) shifted[i] = _mm256_fmadd_ps(a[i], _mm256_set1_ps(-2.f * kLog2e), round);
  for (int i = 0; i < N; ++i) {
    const __m256 y = _mm256_mul_ps(a[i], _mm256_set1_ps(-2.f)), n = _mm256_sub_ps(shifted[i], round);
    r[i] = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2), y);
  }
  // expm1(r) = r + r^2 P(r), P = (P0 r^2 + (P1 r + P2)) r^2 + (P3 r + P4).
  static_assert(std::size(kExpm1P) == 5);
  for (int i = 0; i < N; ++i) {
    r2[i] = _mm256_mul_ps(r[i], r[i]);
    const __m256 high = _mm256_fmadd_ps(_mm256_set1_ps(kExpm1P[1]), r[i], _mm256_set1_ps(kExpm1P[2]));
    const __m256 low = _mm256_fmadd_ps(_mm256_set1_ps(kExpm1P[3]), r[i], _mm256_set1_ps(kExpm1P[4]));
    p[i] = _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(kExpm1P[0]), r2[i], high), r2[i], low);
  }
  for (int i = 0; i < N; ++i) p[i] = _mm256_fmadd_ps(r2[i], p[i], r[i]);
  // d = 2 + u = 2^n expm1(r) + (2^n + 1), beside u.
  for (int i = 0; i < N; ++i) {
    const __m256i exponent = _mm256_sub_epi32(_mm256_castps_si256(shifted[i]), _mm256_set1_epi32(float_bits(kExpRound) - 127));
    const __m256 two_to_n = _mm256_castsi256_ps(_mm256_slli_epi32(exponent, 23));
    u[i] = _mm256_fmadd_ps(two_to_n, p[i], _mm256_sub_ps(two_to_n, one));
    d[i] = _mm256_fmadd_ps(two_to_n, p[i], _mm256_add_ps(two_to_n, one));
  }
  return half;
}

ATTNBENCH_AVX2 [[gnu::always_inline]] inline Vectors tanh_finish(const TanhHalf& half) {
  constexpr int N = kVectors;
  const __m256 sign_bit = _mm256_set1_ps(-0.f), one = _mm256_set1_ps(1.f);
  const __m256 (&u)[N] = half.u.lane;
  const __m256 (&d)[N] = half.d.lane;
  __m256 estimate[N], q[N];
  // q = u / d, d in (1, 2]: the estimate is (1 - e) / d with |e| <= 1.5 2^-12. Beside q0 = u *
  // estimate = u / d (1 - e), e = 1 - d estimate and the better estimate (1 + e) estimate =
  // (1 - e^2) / d; q = q0 + better (u - d q0) = u / d (1 - e^3): within 2^-34 but roundings.
  // tanh(|x|) = -q.
  for (int i = 0; i < N; ++i) estimate[i] = _mm256_rcp_ps(d[i]);
  for (int i = 0; i < N; ++i) {
    const __m256 q0 = _mm256_mul_ps(u[i], estimate[i]);
    const __m256 better = _mm256_fmadd_ps(estimate[i], _mm256_fnmadd_ps(d[i], estimate[i], one), estimate[i]);
    q[i] = _mm256_fmadd_ps(better, _mm256_fnmadd_ps(d[i], q0, u[i]), q0);
  }
  Vectors tanh;
  for (int i = 0; i < N; ++i) tanh.lane[i] = _mm256_or_ps(_mm256_andnot_ps(sign_bit, q[i]), half.sign.lane[i]);
  return tanh;
}

// Calls finish(k, tanh of start(k)) for the blocks k = 0, kBlock, ..., whole - kBlock in turn,
// start(k) giving block k's arguments; each block's tanh_start comes before the block before
// it is finished, so that the core's window holds work of two blocks whose inputs are ready:
// on a 2-core AMD EPYC (Zen 3) 0.87x the time a term of loops that finish each block before
// they start the next (README, "Fused algorithms").
template <class Start, class Finish>
ATTNBENCH_AVX2 [[gnu::always_inline]] inline void tanh_blocks(std::int64_t whole, Start start, Finish finish) {
  if (whole <= 0) return;
  TanhHalf half = tanh_start(start(0));
  for (std::int64_t k = kBlock; k < whole; k += kBlock) {
    const TanhHalf next = tanh_start(start(k));
    finish(k - kBlock, tanh_finish(half));
    half = next;
  }
  finish(whole - kBlock, tanh_finish(half));
}

// 8 elements of f32 or bf16 rows as f32.
ATTNBENCH_AVX2 [[gnu::always_inline]] inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
ATTNBENCH_AVX2 [[gnu::always_inline]] inline __m256 load8(const std::uint16_t* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

// The last width % N elements of a row of `width` as f32 at the start of `block`, zeros after.
template <std::int64_t N, class Row>
[[gnu::always_inline]] inline void tail_of(const Row* row, std::int64_t width, float (&block)[N]) {
  const std::int64_t from = width / N * N;
  std::fill(block, block + N, 0.f);
  for (std::int64_t k = from; k < width; ++k) block[k - from] = load(row, k);
}

// The last width % 8 elements of a row of `width` as f32 in the first lanes, zeros in the
// others. From a width of 8 the row's last whole vector is moved down in registers: a copy
// stored to memory and read back as a vector stalls the load (store forwarding), which made
// the lesson's dot step on a Zen 3 twice as long (README, "Fused algorithms").
template <class Row>
ATTNBENCH_AVX2 [[gnu::always_inline]] inline __m256 tail8(const Row* row, std::int64_t width) {
  if (width < 8) {
    float block[8];
    tail_of(row, width, block);
    return _mm256_loadu_ps(block);
  }
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i rest = _mm256_set1_epi32(static_cast<int>(width % 8));
  // Lane l takes element width - rest + l of the row, the lanes from rest on are cleared.
  const __m256i from = _mm256_sub_epi32(_mm256_add_epi32(lane, _mm256_set1_epi32(8)), rest);
  const __m256 moved = _mm256_permutevar8x32_ps(load8(row + width - 8), from);
  return _mm256_and_ps(moved, _mm256_castsi256_ps(_mm256_cmpgt_epi32(rest, lane)));
}

// The last width % kBlock elements of a row of `width` as f32 in the first lanes of kVectors
// vectors, zeros in the others; in registers (load8, tail8), as tail8 says why.
template <class Row>
ATTNBENCH_AVX2 [[gnu::always_inline]] inline Vectors tail_block(const Row* row, std::int64_t width) {
  const std::int64_t whole = width / kBlock * kBlock;
  Vectors block;
  for (int i = 0; i < kVectors; ++i) {
    const std::int64_t from = whole + 8 * i;
    block.lane[i] = from + 8 <= width ? load8(row + from) : from < width ? tail8(row, width) : _mm256_setzero_ps();
  }
  return block;
}

// a + b, lane by lane.
ATTNBENCH_AVX2 [[gnu::always_inline]] inline Vectors sum_of(const Vectors& a, const Vectors& b) {
  Vectors z;
  for (int i = 0; i < kVectors; ++i) z.lane[i] = _mm256_add_ps(a.lane[i], b.lane[i]);
  return z;
}

// row[k..k + kBlock) as f32.
template <class Row>
ATTNBENCH_AVX2 [[gnu::always_inline]] inline Vectors block_of(const Row* row) {
  Vectors z;
  for (int i = 0; i < kVectors; ++i) z.lane[i] = load8(row + 8 * i);
  return z;
}

// Adds v * tanh to acc, lane by lane.
ATTNBENCH_AVX2 [[gnu::always_inline]] inline void add_terms(const Vectors& v, const Vectors& tanh,
                                                            __m256 (&acc)[kVectors]) {
  for (int i = 0; i < kVectors; ++i) acc[i] = _mm256_fmadd_ps(v.lane[i], tanh.lane[i], acc[i]);
}

// The sum of the lanes of acc: the vectors, then the halves of the sum.
ATTNBENCH_AVX2 [[gnu::always_inline]] inline float sum_of_lanes(const __m256 (&acc)[kVectors]) {
  __m256 sum = acc[0];
  for (int i = 1; i < kVectors; ++i) sum = _mm256_add_ps(sum, acc[i]);
  __m128 half = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
  half = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(half, _mm_movehdup_ps(half)));
}

// out[j] = v . tanh(rows[j, :] + x), one row after the other in blocks of kBlock; a row's tail
// from tail_block (tanh(0) * 0 beyond its end). Prefetches as fused_avx512's loop:
// its stream within the `readable` rows, `next_pass` spread over the blocks.
template <class Row>
ATTNBENCH_AVX2 [[gnu::always_inline]] inline void tanh_dot_rows_of(const Row* rows, const float* x, const float* v,
                                                                   std::int64_t n, std::int64_t width, float* out,
                                                                   std::int64_t readable, PrefetchAlong next_pass) {
  const Vectors x_tail = tail_block(x, width), v_tail = tail_block(v, width);
  const std::int64_t whole = width / kBlock * kBlock;
  const StreamPrefetch ahead(rows, readable * width * static_cast<std::int64_t>(sizeof(Row)));
  SpreadPrefetch along(next_pass, n * ((width + kBlock - 1) / kBlock));
  for (std::int64_t j = 0; j < n; ++j) {
    const Row* row = rows + j * width;
    __m256 acc[kVectors];
    for (int i = 0; i < kVectors; ++i) acc[i] = _mm256_setzero_ps();
    tanh_blocks(
        whole,
        [&](std::int64_t k) ATTNBENCH_AVX2_LAMBDA {
          ahead.request(row + k, kBlock * static_cast<std::int64_t>(sizeof(Row)));
          along.step();
          return sum_of(block_of(row + k), block_of(x + k));
        },
        [&](std::int64_t k, const Vectors& tanh) ATTNBENCH_AVX2_LAMBDA { add_terms(block_of(v + k), tanh, acc); });
    if (whole < width) {
      ahead.request(row + whole, (width - whole) * static_cast<std::int64_t>(sizeof(Row)));
      along.step();
      add_terms(v_tail, tanh_finish(tanh_start(sum_of(tail_block(row, width), x_tail))), acc);
    }
    out[j] = sum_of_lanes(acc);
  }
}

// out[r] = row r . x for the R rows from `first` (rows of `width`): blocks of kBlock into
// kVectors accumulators a row, x's block loaded once for the R, then a last whole vector into
// the first, then the last width % 8 elements (tail8; x's: x_tail) into the second.
template <int R, class Row>
ATTNBENCH_AVX2 [[gnu::always_inline]] inline void dot_rows_block(const Row* first, const float* x, __m256 x_tail,
                                                                 std::int64_t width, float* out) {
  static_assert(kVectors == 2);
  const std::int64_t whole = width / kBlock * kBlock, vectors = width / 8 * 8;
  __m256 acc[R][kVectors];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < kVectors; ++i) acc[r][i] = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < whole; k += kBlock)
    for (int i = 0; i < kVectors; ++i) {
      const __m256 x_k = _mm256_loadu_ps(x + k + 8 * i);
      for (int r = 0; r < R; ++r) acc[r][i] = _mm256_fmadd_ps(load8(first + r * width + k + 8 * i), x_k, acc[r][i]);
    }
  if (whole < vectors) {
    const __m256 x_k = _mm256_loadu_ps(x + whole);
    for (int r = 0; r < R; ++r) acc[r][0] = _mm256_fmadd_ps(load8(first + r * width + whole), x_k, acc[r][0]);
  }
  if (vectors < width)
    for (int r = 0; r < R; ++r) acc[r][1] = _mm256_fmadd_ps(tail8(first + r * width, width), x_tail, acc[r][1]);
  for (int r = 0; r < R; ++r) out[r] = sum_of_lanes(acc[r]);
}

// out[j] = rows[j, :] . x: four rows at a time (eight independent chains), then one.
template <class Row>
ATTNBENCH_AVX2 [[gnu::always_inline]] inline void dot_rows_of(const Row* rows, const float* x, std::int64_t n,
                                                              std::int64_t width, float* out) {
  const __m256 x_tail = tail8(x, width);
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) dot_rows_block<4>(rows + j * width, x, x_tail, width, out + j);
  for (; j < n; ++j) dot_rows_block<1>(rows + j * width, x, x_tail, width, out + j);
}

// y[i] = tanh(x[i] + shift[i]) for i < n, shift nullptr for none; shift_tail is
// tail_block(shift, n) (built once by a caller over many rows), unread when shift is nullptr.
ATTNBENCH_AVX2 [[gnu::always_inline]] inline void tanh_of(const float* x, const float* shift,
                                                          const Vectors& shift_tail, std::int64_t n, float* y) {
  const auto store = [](float* to, const Vectors& tanh) ATTNBENCH_AVX2_LAMBDA {
    for (int i = 0; i < kVectors; ++i) _mm256_storeu_ps(to + 8 * i, tanh.lane[i]);
  };
  const std::int64_t whole = n / kBlock * kBlock;
  tanh_blocks(
      whole,
      [&](std::int64_t i) ATTNBENCH_AVX2_LAMBDA {
        return shift ? sum_of(block_of(x + i), block_of(shift + i)) : block_of(x + i);
      },
      [&](std::int64_t i, const Vectors& tanh) ATTNBENCH_AVX2_LAMBDA { store(y + i, tanh); });
  if (whole < n) {
    const Vectors x_tail = tail_block(x, n);
    float y_tail[kBlock];
    store(y_tail, tanh_finish(tanh_start(shift ? sum_of(x_tail, shift_tail) : x_tail)));
    std::copy(y_tail, y_tail + (n - whole), y + whole);
  }
}

}  // namespace

bool available() {
  static const bool yes = __builtin_cpu_supports("x86-64-v3");
  return yes;
}

ATTNBENCH_AVX2
void dot_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  dot_rows_of(rows, x, n, width, out);
}

ATTNBENCH_AVX2
void dot_rows(const std::uint16_t* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  dot_rows_of(rows, x, n, width, out);
}

ATTNBENCH_AVX2
void tanh_dot_rows(const float* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass) {
  tanh_dot_rows_of(rows, x, v, n, width, out, readable, next_pass);
}

ATTNBENCH_AVX2
void tanh_dot_rows(const std::uint16_t* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass) {
  tanh_dot_rows_of(rows, x, v, n, width, out, readable, next_pass);
}

ATTNBENCH_AVX2
void add_tanh_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  const Vectors x_tail = tail_block(x, width);
  for (std::int64_t j = 0; j < n; ++j) tanh_of(rows + j * width, x, x_tail, width, out + j * width);
}

ATTNBENCH_AVX2
void tanh_all(const float* x, std::int64_t n, float* y) {
  tanh_of(x, nullptr, Vectors{}, n, y);
}

}  // namespace attnbench::fused::avx2
#endif
