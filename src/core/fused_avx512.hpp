// The fused kernels' row loops on CPUs with AVX-512 (x86-64-v4), written with intrinsics.
// Each goes through its rows one at a time, four accumulators along the row, so that the
// rows are read as one sequential stream (but for weighted_sum_rows' register blocks and
// weighted_sum_rows_streamed's four rows at a time, the clones' way): on a 2-core AMD EPYC
// (Zen 4) reading four rows interleaved left DRAM at 13 to 16 GB/s where one stream reached
// 22 to 25 (a scratch program over 16 MB of rows, 1 thread; README, "Fused algorithms").
// The tanh is neither an exp nor a division: |x| (clamped below kTanhClamp) rounded to the
// nearest multiple of kTanhWidth picks one of kTanhIntervals intervals, each lane takes its
// interval's coefficients from two registers (vpermt2ps) and kTanhDegree FMAs evaluate the
// polynomial in the distance to the centre (src/core/tanh_table.hpp, fitted by
// scripts/fit_tanh_table.py). Within 5.9e-8 absolute and 1.15e-7 relative of tanh for every float
// (measured on all of them; tests/fused_kernels_test.cpp checks), tanh(x) = x for tiny x,
// ±1 from |x| >= kTanhClamp on, NaN for NaN. fused_kernels.cpp calls these where available()
// (unless ATTNBENCH_FUSED_LOOPS asks for other loops); the contracts are those of
// fused_kernels.hpp.
#pragma once

#include <cstdint>

#include "core/fused_isa.hpp"
#include "core/fused_prefetch.hpp"

#if ATTNBENCH_X86_LOOPS
namespace attnbench::fused::avx512 {

// True when this CPU runs x86-64-v4 (AVX-512 F, BW, CD, DQ, VL).
bool available();

void dot_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out);
void dot_rows(const std::uint16_t* rows, const float* x, std::int64_t n, std::int64_t width, float* out);
void tanh_dot_rows(const float* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass);
void tanh_dot_rows(const std::uint16_t* rows, const float* x, const float* v, std::int64_t n, std::int64_t width,
                   float* out, std::int64_t readable, PrefetchAlong next_pass);
void add_tanh_rows(const float* rows, const float* x, std::int64_t n, std::int64_t width, float* out);
void weighted_sum_rows(const float* w, const float* rows, std::int64_t n, std::int64_t width, float* out);
void weighted_sum_rows(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width, float* out);
void weighted_sum_rows_streamed(const float* w, const std::uint16_t* rows, std::int64_t n, std::int64_t width,
                                float* out, std::int64_t readable);
void tanh_all(const float* x, std::int64_t n, float* y);

}  // namespace attnbench::fused::avx512
#endif
