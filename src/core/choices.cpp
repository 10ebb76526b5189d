#include "core/choices.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attnbench {

std::string unknown_word(std::string_view field, std::string_view word, std::span<const std::string_view> known) {
  return fmt::format("unknown {} '{}'; known: {}", field, word, fmt::join(known, ", "));
}

}  // namespace attnbench
