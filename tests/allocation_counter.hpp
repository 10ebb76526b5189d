// Counts heap allocations made anywhere in the process (our code, oneDNN, libgomp)
// while a scope is open, by interposing glibc's malloc family in the test executable.
// Link this header's .cpp into its own test binary only: it replaces malloc for everyone.
#pragma once

#include <cstdint>

namespace attnbench::test {

// True when the interposers are compiled in (not under AddressSanitizer, which owns malloc).
bool allocation_counting_available();

// Calls of malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign since
// the last reset, on every thread.
std::int64_t allocations_since_reset();
void reset_allocation_count();

}  // namespace attnbench::test
