#include "allocation_counter.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>

#include "core/address_sanitizer.hpp"

namespace {
std::atomic<std::int64_t> allocations{0};
std::atomic<std::int64_t> frees{0};
}  // namespace

namespace attnbench::test {

std::int64_t allocations_since_reset() { return allocations.load(); }
void reset_allocation_count() {
  allocations.store(0);
  frees.store(0);
}
std::int64_t live_blocks_since_reset() { return allocations.load() - frees.load(); }

#if ATTNBENCH_ADDRESS_SANITIZER
bool allocation_counting_available() { return false; }
#else
bool allocation_counting_available() { return true; }
#endif

}  // namespace attnbench::test

#if !ATTNBENCH_ADDRESS_SANITIZER
// glibc's own entry points (exported by libc.so.6); every definition below counts one
// call and forwards. Shared libraries resolve malloc to these through the executable.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* pointer);

void* malloc(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (pointer != nullptr) frees.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(pointer, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) { return memalign(alignment, size); }
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  void* pointer = memalign(alignment, size);
  if (pointer == nullptr) return ENOMEM;
  *out = pointer;
  return 0;
}
void free(void* pointer) {
  if (pointer != nullptr) frees.fetch_add(1, std::memory_order_relaxed);
  __libc_free(pointer);
}
}
#endif
