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

// Blocks allocated minus blocks freed (free of a non-null pointer, realloc of a non-null
// pointer counts as one free and one allocation) since the last reset: 0 when everything
// allocated in between was also released.
std::int64_t live_blocks_since_reset();

}  // namespace attnbench::test
