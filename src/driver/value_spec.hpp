// Parsing one flag or scenario-cell value into the list of values it stands for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnbench {

// Most values one spec may expand to; a longer range or list is rejected.
inline constexpr std::size_t kMaxSpecValues = 100000;

// Parses an integer spec into its values, in the order written. A spec is a list of
// items separated by `list_separator` (',' for CLI flags, ';' inside scenario cells);
// each item is
//   a value            "8"
//   an arithmetic range "10:100:10" -> 10,20,...,100 (inclusive; "lo:hi" means step 1)
//   a geometric range   "16:1024:*2" -> 16,32,...,1024 (factor >= 2, lo >= 1; stops at
//                       the last value <= hi)
// Spaces around items are ignored. Example: parse_int_spec("8,32:128:*2", ',') == {8, 32, 64, 128}.
// Throws std::invalid_argument with a short reason (no field name) for an empty spec or item,
// a non-number, trailing junk, lo > hi, a zero step, a factor < 2, or more than kMaxSpecValues values.
std::vector<std::int64_t> parse_int_spec(std::string_view text, char list_separator);

// The same for unsigned values (seeds up to 2^64-1); a minus sign is rejected.
std::vector<std::uint64_t> parse_uint_spec(std::string_view text, char list_separator);

// Parses a word spec: one word or a list. Example: parse_word_spec("fast;torch", ';') == {"fast", "torch"}.
// Throws std::invalid_argument for an empty spec or an empty item.
std::vector<std::string> parse_word_spec(std::string_view text, char list_separator);

// Parses a scorer spec: names from scorer_table(), or "all" for every scorer, duplicates
// dropped, first-seen order. Example: parse_scorer_spec("dot,all", ',') == {"dot", "additive", ...}.
// Throws std::invalid_argument for an unknown name, listing the known names.
std::vector<std::string> parse_scorer_spec(std::string_view text, char list_separator);

}  // namespace attnbench
