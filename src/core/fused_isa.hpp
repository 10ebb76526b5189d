// Whether the fused kernels' x86 code is built: the intrinsics loops (fused_avx512, fused_avx2)
// and the clones per instruction set (fused_kernels.cpp). On x86-64 with GCC, whose target
// attributes compile each function for its own instruction set within one build; not where
// ATTNBENCH_FUSED_BASELINE_ONLY is defined (the test binary fused_baseline_tests), which
// builds fused_kernels.cpp's loops for the baseline instruction set alone: the arithmetic of
// the clones' "default" that a CPU without AVX2 runs, tested on any CPU.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ATTNBENCH_FUSED_BASELINE_ONLY)
#define ATTNBENCH_X86_LOOPS 1
#else
#define ATTNBENCH_X86_LOOPS 0
#endif
