#include "core/fused_kernels.hpp"

#include <algorithm>

#include "core/env_choice.hpp"
#include "core/fused_math.hpp"
#include "core/fused_prefetch.hpp"
#include "core/fused_avx2.hpp"
#include "core/fused_avx512.hpp"

// One clone per instruction set, chosen at load time; helpers such as fast_tanh are
// always_inline, so each clone vectorizes them with its own instructions.
#if ATTNBENCH_X86_LOOPS
#define ATTNBENCH_ISA_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNBENCH_ISA_CLONES
#endif

namespace attnbench::fused {

namespace {

// Writes out[r] = the sum of term(r, k) over k in [0, width) for the R rows r < R: each row
// in kLanes lanes (lane k % kLanes, k in order), then its lanes pairwise, halves first (for
// 8: ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7))). No sum crosses the lanes, however a clone
// vectorizes them, so the order is one for every element type and instruction set: a bf16
// loop equals its f32 loop on the rounded rows bit for bit, on the baseline clone too (whose
// vectorizer takes 4 lanes and epilogues of its own choosing where a reduction is left to it).
constexpr int kLanes = 8;
template <int R, class Term>
[[gnu::always_inline]] inline void sum_in_lanes(std::int64_t width, Term term, float* __restrict out) {
  float lanes[R][kLanes] = {};
  std::int64_t k = 0;
  for (; k + kLanes <= width; k += kLanes)
    for (int r = 0; r < R; ++r)
#pragma omp simd
      for (int l = 0; l < kLanes; ++l) lanes[r][l] += term(r, k + l);
  for (int l = 0; k + l < width; ++l)
    for (int r = 0; r < R; ++r) lanes[r][l] += term(r, k + l);
  for (int r = 0; r < R; ++r) {
    for (int half = kLanes / 2; half >= 1; half /= 2)
      for (int l = 0; l < half; ++l) lanes[r][l] += lanes[r][l + half];
    out[r] = lanes[r][0];
  }
}

// out[j] = rows[j, :] . x: four rows at a time (four independent chains, each x[k] loaded
// once for all four), then one.
template <class Row>
[[gnu::always_inline]] inline void dot_rows_of(const Row* __restrict rows, const float* __restrict x, std::int64_t n,
                                               std::int64_t width, float* __restrict out) {
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const Row* __restrict first = rows + j * width;
    sum_in_lanes<4>(width, [&](int r, std::int64_t k) { return load(first + r * width, k) * x[k]; }, out + j);
  }
  for (; j < n; ++j) {
    const Row* __restrict row = rows + j * width;
    sum_in_lanes<1>(width, [&](int, std::int64_t k) { return load(row, k) * x[k]; }, out + j);
  }
}

// out[j] = v . tanh(rows[j, :] + x): four rows at a time (four independent tanh chains in
// flight: the loop is bound by their latency, not by memory), then one.
template <class Row>
[[gnu::always_inline]] inline void tanh_dot_rows_of(const Row* __restrict rows, const float* __restrict x,
                                                    const float* __restrict v, std::int64_t n, std::int64_t width,
                                                    float* __restrict out) {
  std::int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const Row* __restrict first = rows + j * width;
    sum_in_lanes<4>(
        width, [&](int r, std::int64_t k) { return v[k] * fast_tanh(load(first + r * width, k) + x[k]); }, out + j);
  }
  for (; j < n; ++j) {
    const Row* __restrict row = rows + j * width;
    sum_in_lanes<1>(width, [&](int, std::int64_t k) { return v[k] * fast_tanh(load(row, k) + x[k]); }, out + j);
  }
}

// Each 4-row block prefetches BlockPrefetch's block within the `readable` rows (0: none), one
// cache line of each of its rows per line of its own.
template <class Row>
[[gnu::always_inline]] inline void weighted_sum_rows_of(const float* __restrict w, const Row* __restrict rows,
                                                        std::int64_t n, std::int64_t width, float* __restrict out,
                                                        std::int64_t readable) {
  std::fill(out, out + width, 0.f);
  const BlockPrefetch ahead(rows, width * static_cast<std::int64_t>(sizeof(Row)), readable);
  std::int64_t j = 0;
  // Four rows at a time: out is loaded and stored once per four rows, not once per row.
  for (; j + 4 <= n; j += 4) {
    const Row* __restrict r0 = rows + j * width;
    const Row* __restrict r1 = r0 + width;
    const Row* __restrict r2 = r1 + width;
    const Row* __restrict r3 = r2 + width;
    const float w0 = w[j], w1 = w[j + 1], w2 = w[j + 2], w3 = w[j + 3];
    std::int64_t k = 0;
    if (const char* next = ahead.of(j)) {
      constexpr std::int64_t kLine = 64 / static_cast<std::int64_t>(sizeof(Row));  // elements per cache line
      for (; k + kLine <= width; k += kLine) {
        const char* line = next + k * static_cast<std::int64_t>(sizeof(Row));
        for (int row = 0; row < 4; ++row) __builtin_prefetch(line + row * ahead.row_bytes());
#pragma omp simd
        for (std::int64_t i = k; i < k + kLine; ++i)
          out[i] += w0 * load(r0, i) + w1 * load(r1, i) + w2 * load(r2, i) + w3 * load(r3, i);
      }
    }
#pragma omp simd
    for (std::int64_t i = k; i < width; ++i) out[i] += w0 * load(r0, i) + w1 * load(r1, i) + w2 * load(r2, i) + w3 * load(r3, i);
  }
  for (; j < n; ++j) {
    const Row* __restrict row = rows + j * width;
    const float weight = w[j];
#pragma omp simd
    for (std::int64_t k = 0; k < width; ++k) out[k] += weight * load(row, k);
  }
}

}  // namespace

// f32 rows: the clones on every CPU, AVX-512 ones too (fused_avx512's weighted_sum_rows is for
// rows in the caches). bf16 rows: fused_avx512's loop where it runs, else the clones.
ATTNBENCH_ISA_CLONES
void weighted_sum_rows_streamed(const float* w, const float* rows, std::int64_t n, std::int64_t width, float* out) {
  weighted_sum_rows_of(w, rows, n, width, out, 0);
}

ATTNBENCH_ISA_CLONES
void to_bf16(const float* __restrict x, std::int64_t n, std::uint16_t* __restrict y) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) y[i] = to_bf16_bits(x[i]);
}

// The loops that fused_avx512 writes for AVX-512 CPUs (and fused_avx2, the tanh ones, for AVX2
// CPUs), as clones for the others (the tanh ones with fast_tanh).
namespace portable {

ATTNBENCH_ISA_CLONES
void dot_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  dot_rows_of(rows, x, n, width, out);
}
ATTNBENCH_ISA_CLONES
void dot_rows(const std::uint16_t* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  dot_rows_of(rows, x, n, width, out);
}

// These prefetch neither the rows past n (`readable` is unused) nor `next_pass`.
ATTNBENCH_ISA_CLONES
void tanh_dot_rows(const float* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t /*readable*/, PrefetchAlong /*next_pass*/) {
  tanh_dot_rows_of(rows, x, v, n, width, out);
}
ATTNBENCH_ISA_CLONES
void tanh_dot_rows(const std::uint16_t* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t /*readable*/, PrefetchAlong /*next_pass*/) {
  tanh_dot_rows_of(rows, x, v, n, width, out);
}

ATTNBENCH_ISA_CLONES
void weighted_sum_rows(const float* w, const float* rows, std::int64_t n, std::int64_t width, float* out) {
  weighted_sum_rows_of(w, rows, n, width, out, 0);
}
ATTNBENCH_ISA_CLONES
void weighted_sum_rows(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width, float* out) {
  weighted_sum_rows_of(w, rows, n, width, out, 0);
}

ATTNBENCH_ISA_CLONES
void weighted_sum_rows_streamed(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width,
                                float* out, std::int64_t readable) {
  weighted_sum_rows_of(w, rows, n, width, out, readable);
}

ATTNBENCH_ISA_CLONES
void add_tanh_rows(const float* __restrict rows, const float* __restrict x, std::int64_t n, std::int64_t width,
                   float* __restrict out) {
  for (std::int64_t j = 0; j < n; ++j) {
    const float* __restrict row = rows + j * width;
    float* __restrict y = out + j * width;
#pragma omp simd
    for (std::int64_t k = 0; k < width; ++k) y[k] = fast_tanh(row[k] + x[k]);
  }
}

ATTNBENCH_ISA_CLONES
void tanh_all(const float* __restrict x, std::int64_t n, float* __restrict y) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) y[i] = fast_tanh(x[i]);
}

}  // namespace portable

namespace {
constexpr const char* kLoopsVariable = "ATTNBENCH_FUSED_LOOPS";
constexpr EnvValue kLoopsValues[] = {{"best", "the default: the best loops this CPU runs"},
                                     {"avx2", "fused_avx2's loops, those of CPUs with AVX2 and FMA but without AVX-512"},
                                     {"portable", "the plain C++ loops that CPUs without AVX2 run, here compiled for this CPU"}};

// The loops that run (the names loops_name() gives): fused_avx512's where the CPU has AVX-512,
// else fused_avx2's loops (with the clones for the rest) where it has AVX2 and FMA, else
// the clones; ATTNBENCH_FUSED_LOOPS=avx2 or portable picks those (avx2 only where the CPU has it).
enum class Loops { avx512, avx2, portable };

Loops loops() {
#if ATTNBENCH_X86_LOOPS
  static const Loops chosen = [] {
    const std::string_view asked = env_value(kLoopsVariable);
    if (asked == kLoopsValues[2].value) return Loops::portable;
    if (asked != kLoopsValues[1].value && avx512::available()) return Loops::avx512;
    return avx2::available() ? Loops::avx2 : Loops::portable;
  }();
  return chosen;
#else
  return Loops::portable;
#endif
}
}  // namespace

const char* loops_name() {
  switch (loops()) {
    case Loops::avx512: return "avx512";
    case Loops::avx2: return "avx2";
    case Loops::portable: break;
  }
  return "portable";
}

std::string loops_setting_error() {
  std::string error = env_choice_error(kLoopsVariable, kLoopsValues);
  if (error.empty() && env_value(kLoopsVariable) == kLoopsValues[1].value && loops() != Loops::avx2)
    error = std::string(kLoopsVariable) +
            "=avx2: this CPU has no x86-64-v3 (AVX2, FMA, BMI2, ...) or this build no x86 loops; use best or portable";
  return error;
}

// AVX512_OR_CLONE: fused_avx512's loop where it runs, else the clone. AVX512_AVX2_OR_CLONE: the
// same, with fused_avx2's loop where that runs.
#if ATTNBENCH_X86_LOOPS
#define ATTNBENCH_AVX512_OR_CLONE(loop, ...) \
  (loops() == Loops::avx512 ? avx512::loop(__VA_ARGS__) : portable::loop(__VA_ARGS__))
#define ATTNBENCH_AVX512_AVX2_OR_CLONE(loop, ...)                                           \
  (loops() == Loops::avx512 ? avx512::loop(__VA_ARGS__)                                     \
                            : loops() == Loops::avx2 ? avx2::loop(__VA_ARGS__) : portable::loop(__VA_ARGS__))
#else
#define ATTNBENCH_AVX512_OR_CLONE(loop, ...) portable::loop(__VA_ARGS__)
#define ATTNBENCH_AVX512_AVX2_OR_CLONE(loop, ...) portable::loop(__VA_ARGS__)
#endif

void dot_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  ATTNBENCH_AVX512_AVX2_OR_CLONE(dot_rows, rows, x, n, width, out);
}
void dot_rows(const std::uint16_t* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  ATTNBENCH_AVX512_AVX2_OR_CLONE(dot_rows, rows, x, n, width, out);
}
void tanh_dot_rows(const float* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass) {
  ATTNBENCH_AVX512_AVX2_OR_CLONE(tanh_dot_rows, rows, x, v, n, width, out, readable, next_pass);
}
void tanh_dot_rows(const std::uint16_t* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass) {
  ATTNBENCH_AVX512_AVX2_OR_CLONE(tanh_dot_rows, rows, x, v, n, width, out, readable, next_pass);
}
void add_tanh_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out) {
  ATTNBENCH_AVX512_AVX2_OR_CLONE(add_tanh_rows, rows, x, n, width, out);
}
void tanh_all(const float* x, std::int64_t n, float* y) { ATTNBENCH_AVX512_AVX2_OR_CLONE(tanh_all, x, n, y); }
void weighted_sum_rows(const float* w, const float* rows, std::int64_t n, std::int64_t width, float* out) {
  ATTNBENCH_AVX512_OR_CLONE(weighted_sum_rows, w, rows, n, width, out);
}
void weighted_sum_rows(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width, float* out) {
  ATTNBENCH_AVX512_OR_CLONE(weighted_sum_rows, w, rows, n, width, out);
}

void weighted_sum_rows_streamed(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width,
                                float* out, std::int64_t readable) {
  ATTNBENCH_AVX512_OR_CLONE(weighted_sum_rows_streamed, w, rows, n, width, out, readable);
}

double tanh_term_macs() { return loops() == Loops::avx512 ? 4 : 10; }

ATTNBENCH_ISA_CLONES
void masked_softmax_row(const float* __restrict logits, std::int64_t len, std::int64_t src_len,
                        float* __restrict alpha) {
  float largest = logits[0];
#pragma omp simd reduction(max : largest)
  for (std::int64_t j = 1; j < len; ++j) largest = std::max(largest, logits[j]);
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < len; ++j) {
    alpha[j] = exp_nonpositive(logits[j] - largest);
    sum += alpha[j];
  }
#pragma omp simd
  for (std::int64_t j = 0; j < len; ++j) alpha[j] /= sum;
  std::fill(alpha + len, alpha + src_len, 0.f);
}

}  // namespace attnbench::fused
