// One grid point: every size the harness needs, plus how to initialise and run it.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/choices.hpp"

namespace attnbench {

// Sizes and settings of one encoder-decoder run, one member per line of
// core/problem_fields.def. enc_dim is 2 x the encoder's GRU hidden size (forward and
// backward states are concatenated); len_min 0 means src_len (no padding).
struct Problem {
#define ATTNBENCH_FIELD(name, flag, cpp_type, kind, default_value, decoder_only, description) \
  cpp_type name = default_value;
#include "core/problem_fields.def"

  std::int64_t enc_hidden() const { return enc_dim / 2; }
  std::int64_t effective_len_min() const { return len_min == 0 ? src_len : len_min; }
};

// Valid source length of each example: linearly spaced from src_len (example 0)
// down to len_min (the last example). Example: batch 3, src_len 10, len_min 4 -> {10, 7, 4}.
std::vector<std::int64_t> source_lengths(const Problem& p);

// Bytes the harness allocates for p (parameters and activations), an upper estimate.
std::uint64_t estimated_bytes(const Problem& p);

// Bytes of memory available to this process now (MemAvailable), 0 if unknown.
std::uint64_t available_memory_bytes();

// Throws std::invalid_argument with one line naming the flag and the bad value
// when a field is out of range.
void validate_sizes(const Problem& p);

// validate_sizes(), and refuses a point that would not fit in 75% of available memory.
void validate(const Problem& p);

// The word of an enum value: to_string(Impl::fused) == "fused".
inline std::string to_string(Impl value) { return std::string(to_word(value)); }
inline std::string to_string(DType value) { return std::string(to_word(value)); }
inline std::string to_string(InitKind value) { return std::string(to_word(value)); }

// Every field of p as text, in core/problem_fields.def order: {{"scorer", "dot"}, {"batch", "2"}, ...}.
std::vector<std::pair<std::string, std::string>> field_values(const Problem& p);

// A shell command that runs exactly this point again, e.g.
// "attnbench probe --scorer dot --batch 2 ...".
std::string repro_flags(const Problem& p);

}  // namespace attnbench
