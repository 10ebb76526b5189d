// The loops of the fused attention step (Impl::fused), plain C++ that GCC vectorizes.
// Each is compiled for AVX-512, for AVX2 + FMA and for baseline x86-64; the loader
// picks the best one the CPU runs (GCC target_clones). dot_rows, weighted_sum_rows (and
// weighted_sum_rows_streamed of bf16 rows) and the tanh loops are the exception: on AVX-512
// CPUs they run fused_avx512.hpp's (rows read as one stream, or, for weighted_sum_rows, summed
// in registers from the caches; bf16 rows of a weighted sum as pairs; a table tanh with
// neither exp nor division), on AVX2 CPUs the tanh loops and dot_rows run fused_avx2.hpp's (a
// rational tanh without a division instruction; bf16 rows in 256-bit vectors), elsewhere
// these clones (the tanh ones with fast_tanh). All pointers are row-major, f32 or the bf16
// rows below, and must not overlap an output. Example: dot_rows(keys, q, len, A, e) scores one example.
#pragma once

#include <cstdint>
#include <string>

#include "core/fused_prefetch.hpp"

namespace attnbench::fused {

// Which loops run: "avx512" (fused_avx512.hpp's, on CPUs with AVX-512), "avx2"
// (fused_avx2.hpp's loops and the clones, on CPUs with AVX2 and FMA but not AVX-512) or
// "portable" (the clones, fast_tanh, as CPUs without AVX2 run them). The environment variable
// ATTNBENCH_FUSED_LOOPS chooses: unset, empty or "best" the best this CPU runs, "avx2" those
// on any CPU with AVX2 and FMA, "portable" the clones everywhere (so that an AVX-512 machine
// checks and times the loops of the others; the clones it runs are those of its own
// instruction set). Read once.
const char* loops_name();

// "" when ATTNBENCH_FUSED_LOOPS is unset or valid, else one line naming it and its bad value
// (avx2 on a CPU without AVX2 and FMA is bad).
std::string loops_setting_error();

// The row loops below also take bf16 rows (std::uint16_t, the upper half of an f32, made by
// to_bf16): each element is loaded into an f32 register and everything else is f32.

// Writes y[i] = x[i] rounded to bf16 (nearest even, as oneDNN's reorder) for i < n.
void to_bf16(const float* x, std::int64_t n, std::uint16_t* y);

// Writes out[j] = rows[j, :] . x for j < n; rows is (n, width).
void dot_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out);
void dot_rows(const std::uint16_t* rows, const float* x, std::int64_t n, std::int64_t width, float* out);

// Writes out[j] = v . tanh(rows[j, :] + x) for j < n (the additive score), without
// an (n, width) intermediate; x and v are (width). rows is (max(n, readable), width): the
// rows up to `readable` (give the ones scored next, e.g. the following examples' keys, when
// they stream from DRAM; 0 when they stay in the caches: nothing is prefetched) may be
// prefetched while these are scored, and so may `next_pass` (the memory the caller reads
// next, e.g. the example's annotations); neither is read and `out` does not depend on them.
void tanh_dot_rows(const float* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass = {});
void tanh_dot_rows(const std::uint16_t* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass = {});

// Writes out[j, :] = tanh(rows[j, :] + x) for j < n with tanh_dot_rows's tanh; rows and out
// are (n, width), x is (width). The (n, width) tensor a training step keeps for its backward.
void add_tanh_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out);

// Writes y[i] = tanh(x[i]) for i < n with tanh_dot_rows's tanh.
void tanh_all(const float* x, std::int64_t n, float* y);

// Multiply-add equivalents of one tanh_dot_rows term on this CPU, against one for a
// dot_rows term: 4 for the AVX-512 table tanh, 10 for fast_tanh's arithmetic (about 20 FMA
// and integer operations: the clones and fused_avx2's loops alike); the table tanh 0.28 ns a
// term on a 2-core Zen 4 (2026-12-03), fast_tanh 0.45 on a Zen 5 (2026-12-02); on a Zen 3
// fused_avx2's about 0.68x fast_tanh's clone (2026-12-06).
double tanh_term_macs();

// Writes alpha[j] = exp(logits[j]) / sum_{i < len} exp(logits[i]) for j < len and
// alpha[j] = 0.f for len <= j < src_len; logits[j >= len] are not read. Needs 1 <= len.
void masked_softmax_row(const float* logits, std::int64_t len, std::int64_t src_len, float* alpha);

// Writes out = sum_{j < n} w[j] rows[j, :]; rows is (n, width), out is (width). For rows in
// the caches: on AVX-512 CPUs along the row in blocks summed over all rows in registers.
void weighted_sum_rows(const float* w, const float* rows, std::int64_t n, std::int64_t width, float* out);
void weighted_sum_rows(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width, float* out);
// The same sum over rows that stream from DRAM, four rows at a time on every CPU (bit for bit
// weighted_sum_rows where that runs the clones, up to the order of its additions on AVX-512
// CPUs). f32 rows keep up with the hardware prefetcher. bf16 rows do not (converting them in
// registers leaves it behind; on AVX-512 CPUs fused_avx512's loop, with the clones' four rows
// and prefetch, takes them as pairs, 2 operations for 32 elements): rows is (readable, width)
// with readable >= n, and the rows past the n summed (give the ones summed next, e.g. the
// following examples' annotations) are prefetched while these are summed; they are not read
// and `out` does not depend on them.
// From the caches the prefetches only cost (FusedAttend says when).
void weighted_sum_rows_streamed(const float* w, const float* rows, std::int64_t n, std::int64_t width, float* out);
void weighted_sum_rows_streamed(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width,
                                float* out, std::int64_t readable);

}  // namespace attnbench::fused
