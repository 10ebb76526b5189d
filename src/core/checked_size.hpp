// Size arithmetic that cannot wrap: every product of sizes (element counts, bytes, oneDNN
// dims) is formed here, saturating at kSizeOverflow or throwing, never wrapping.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnbench {

// The saturated value: "too large to represent".
inline constexpr std::uint64_t kSizeOverflow = std::numeric_limits<std::uint64_t>::max();

// A byte or element count that saturates at kSizeOverflow instead of wrapping; negative
// inputs count as 0 (sizes are validated elsewhere). Example:
// (Size(std::int64_t{1} << 40) * Size(std::int64_t{1} << 40)).overflowed() is true.
struct Size {
  std::uint64_t value = 0;

  constexpr Size() = default;
  constexpr Size(std::int64_t v) : value(v < 0 ? 0 : static_cast<std::uint64_t>(v)) {}  // NOLINT: implicit on purpose
  constexpr Size(std::uint64_t v) : value(v) {}                                         // NOLINT
  constexpr Size(int v) : Size(static_cast<std::int64_t>(v)) {}                          // NOLINT

  constexpr bool overflowed() const { return value == kSizeOverflow; }

  friend constexpr Size operator+(Size a, Size b) {
    std::uint64_t out = 0;
    return __builtin_add_overflow(a.value, b.value, &out) ? Size(kSizeOverflow) : Size(out);
  }
  friend constexpr Size operator*(Size a, Size b) {
    std::uint64_t out = 0;
    return __builtin_mul_overflow(a.value, b.value, &out) ? Size(kSizeOverflow) : Size(out);
  }
};

// The product of `dims` as an int64 (a oneDNN dim or an element count), or throws
// std::length_error "<what>: size product overflows" when it is not representable.
inline std::int64_t checked_product(std::initializer_list<std::int64_t> dims, const char* what) {
  std::int64_t out = 1;
  for (std::int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(out, d, &out))
      throw std::length_error(std::string(what) + ": size product overflows");
  return out;
}

}  // namespace attnbench
