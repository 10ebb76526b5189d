// The fused kernels' tanh loops and dot_rows on CPUs with AVX2 and FMA (x86-64-v3) but without
// AVX-512, written with intrinsics; their weighted-sum loops are fused_kernels.cpp's clones.
// dot_rows: the clone's vectorizer sizes its vectors by bf16 rows' 16-bit loads and so sums in
// 128-bit halves; this one widens 8 bf16 into a 256-bit vector (one vpmovzxwd and a shift),
// four rows at a time in two accumulators each. On a 2-core AMD EPYC (Zen 3) the bf16 score
// of dot and general takes 0.42x to 0.44x the clone's time, f32 0.98x to 1.04x (README,
// "Fused algorithms").
// The tanh is fast_tanh's form (fused_math.hpp: u = expm1(-2|x|), then -u / (2 + u)) on a
// shorter dependency chain: the range reduction by ln2 in one step, expm1 by a degree-4
// polynomial (kExpm1P) in Estrin's scheme, 2 + u beside u, and the quotient from vrcpps's
// estimate with a correction of order three, no division instruction. Within 1.09e-7
// absolute (at x = 8.1445) and 1.81e-7 relative (at x = 0.1517) of tanh for every float
// (measured on all of them; tests/fused_kernels_test.cpp checks), tanh(x) = x for tiny x,
// ±1 from |x| >= kFastTanhClamp on, NaN for NaN. Two vectors are in flight, each phase for
// both before the next (three were slower), and each block's tanh starts before the block
// before it is finished. On a 2-core AMD EPYC (Zen 3) a term takes 0.78x the time of the
// form before this one (fast_tanh's steps, two corrections in a row), which took 0.68x that
// of fast_tanh's AVX2 clone, and the overlapped blocks take 0.87x the time of blocks one
// after the other (README, "Fused algorithms"). fused_kernels.cpp calls these where
// available() and the CPU has no AVX-512, or where available() and
// ATTNBENCH_FUSED_LOOPS=avx2; the contracts are those of fused_kernels.hpp.
#pragma once

#include <cstdint>

#include "core/fused_isa.hpp"
#include "core/fused_prefetch.hpp"

#if ATTNBENCH_X86_LOOPS
namespace attnbench::fused::avx2 {

// True when this CPU runs x86-64-v3 (AVX2, FMA, BMI2, F16C, MOVBE).
bool available();

void dot_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out);
void dot_rows(const std::uint16_t* rows, const float* x, std::int64_t n, std::int64_t width, float* out);
void tanh_dot_rows(const float* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass);
void tanh_dot_rows(const std::uint16_t* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass);
void add_tanh_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out);
void tanh_all(const float* x, std::int64_t n, float* y);

}  // namespace attnbench::fused::avx2
#endif
