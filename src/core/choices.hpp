// The enum-valued Problem fields (core/choices.def) and their words, parsed in one place.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnbench {

// How a step is computed: oneDNN primitives only, or the fused OpenMP + SIMD kernels
// (scores, masked softmax and context in one pass over the source, no (B, L, A) tensor).
enum class Impl {
#define ATTNBENCH_IMPL(word) word,
#include "core/choices.def"
};
// Input type of the oneDNN matmuls (bf16 accumulates in f32 and writes f32; the fused step's
// query is f32 where !fused_bf16_query_in_bf16(), its keys and annotations bf16 still).
enum class DType {
#define ATTNBENCH_DTYPE(word) word,
#include "core/choices.def"
};
// How the parameters are drawn.
enum class InitKind {
#define ATTNBENCH_INIT(word) word,
#include "core/choices.def"
};

// The words of enum E in declaration order, and the Problem field that holds one.
template <typename E>
struct ChoiceList;
template <>
struct ChoiceList<Impl> {
  static constexpr std::string_view field = "impl";
  static constexpr auto words = std::to_array<std::string_view>({
#define ATTNBENCH_IMPL(word) #word,
#include "core/choices.def"
  });
};
template <>
struct ChoiceList<DType> {
  static constexpr std::string_view field = "dtype";
  static constexpr auto words = std::to_array<std::string_view>({
#define ATTNBENCH_DTYPE(word) #word,
#include "core/choices.def"
  });
};
template <>
struct ChoiceList<InitKind> {
  static constexpr std::string_view field = "init";
  static constexpr auto words = std::to_array<std::string_view>({
#define ATTNBENCH_INIT(word) #word,
#include "core/choices.def"
  });
};

template <typename E>
std::span<const std::string_view> choice_words() {
  return ChoiceList<E>::words;
}

template <typename E>
std::string_view to_word(E value) {
  return ChoiceList<E>::words[static_cast<std::size_t>(value)];
}

// The one text for a word that is not in a list: "unknown impl 'x'; known: onednn, fused".
std::string unknown_word(std::string_view field, std::string_view word, std::span<const std::string_view> known);

template <typename E>
std::optional<E> find_choice(std::string_view word) {
  for (std::size_t i = 0; i < ChoiceList<E>::words.size(); ++i)
    if (ChoiceList<E>::words[i] == word) return static_cast<E>(i);
  return std::nullopt;
}

// The value of `word`; throws std::invalid_argument "unknown impl 'x'; known: onednn, fused"
// (the caller names the flag or file:line).
template <typename E>
E parse_choice(std::string_view word) {
  if (const auto found = find_choice<E>(word)) return *found;
  throw std::invalid_argument(unknown_word(ChoiceList<E>::field, word, ChoiceList<E>::words));
}

}  // namespace attnbench
