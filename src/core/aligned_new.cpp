// Replaces the global operator new and delete so that every heap block of 64 bytes or more
// starts on a 64-byte cache line (smaller ones come from malloc, whose thread cache
// aligned_alloc bypasses: a small new/delete pair costs about 3x more through it). The
// fused kernels load whole 64-byte vectors from rows that live in std::vector buffers
// (annotations, keys, queries, weights); glibc's malloc returns 16-byte alignment, which
// makes every such load straddle two lines. Measured at the mid
// size (B32 L50 E512 D256 A256) on a 2-core AMD EPYC (Zen 5): the fused step up to 20%
// faster on 1 thread and up to 30% on 2. The array and nothrow forms call these by the
// standard's default definitions; on failure this throws std::bad_alloc (no new_handler).
// Left out under AddressSanitizer, whose own operator new checks new/delete pairing.
#include <cstdint>
#include <cstdlib>
#include <new>

#include "core/address_sanitizer.hpp"

#if !ATTNBENCH_ADDRESS_SANITIZER

namespace {
constexpr std::size_t kCacheLine = 64;
}  // namespace

void* operator new(std::size_t size) {
  if (size > SIZE_MAX - (kCacheLine - 1)) throw std::bad_alloc();  // the rounding below would wrap
  void* block = size < kCacheLine ? std::malloc(size == 0 ? 1 : size)
                                  : std::aligned_alloc(kCacheLine, (size + kCacheLine - 1) / kCacheLine * kCacheLine);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

void operator delete(void* block) noexcept { std::free(block); }
void operator delete(void* block, std::size_t) noexcept { std::free(block); }

#endif
