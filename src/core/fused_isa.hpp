// Whether the fused kernels' x86 code is built: the intrinsics loops (fused_avx512, fused_avx2)
// and the clones per instruction set (fused_kernels.cpp). On x86-64 with GCC, whose target
// attributes compile each function for its own instruction set within one build.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ATTNBENCH_X86_LOOPS 1
#else
#define ATTNBENCH_X86_LOOPS 0
#endif
