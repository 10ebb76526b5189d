#include "driver/value_spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <type_traits>

#include "variants/registry.hpp"

namespace attnbench {

namespace {

std::string_view trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Splits on `sep`, trims each item, rejects an empty spec or an empty item.
std::vector<std::string_view> split_items(std::string_view text, char sep) {
  if (trim(text).empty()) throw std::invalid_argument("empty value");
  std::vector<std::string_view> items;
  while (true) {
    const std::size_t at = text.find(sep);
    const std::string_view item = trim(text.substr(0, at));
    if (item.empty()) throw std::invalid_argument(std::string("empty item in a '") + sep + "'-separated list");
    items.push_back(item);
    if (at == std::string_view::npos) return items;
    text.remove_prefix(at + 1);
  }
}

template <class T>
T parse_number(std::string_view s, const char* what) {
  T value{};
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec == std::errc::result_out_of_range)
    throw std::invalid_argument(std::string(what) + " '" + std::string(s) + "' is out of range");
  if (ec != std::errc() || ptr == s.data())
    throw std::invalid_argument(std::string(what) + " '" + std::string(s) + "' is not " +
                                (std::is_signed_v<T> ? "a whole number" : "a non-negative whole number"));
  if (ptr != end)
    throw std::invalid_argument("trailing characters '" + std::string(ptr, end) + "' after " + what + " '" +
                                std::string(s.data(), ptr) + "'");
  return value;
}

std::string too_many() { return "expands to more than " + std::to_string(kMaxSpecValues) + " values"; }

// Appends the values of one item ("8", "10:100:10", "16:1024:*2") to `out`.
template <class T>
void append_item(std::string_view item, std::vector<T>& out) {
  using U = std::make_unsigned_t<T>;
  const std::size_t c1 = item.find(':');
  if (c1 == std::string_view::npos) {
    out.push_back(parse_number<T>(item, "value"));
    return;
  }
  const std::size_t c2 = item.find(':', c1 + 1);
  const T lo = parse_number<T>(trim(item.substr(0, c1)), "range start");
  const T hi = parse_number<T>(trim(item.substr(c1 + 1, c2 == std::string_view::npos ? c2 : c2 - c1 - 1)),
                               "range end");
  if (lo > hi)
    throw std::invalid_argument("range '" + std::string(item) + "' has start " + std::to_string(lo) + " > end " +
                                std::to_string(hi));
  const std::string_view step = c2 == std::string_view::npos ? std::string_view("1") : trim(item.substr(c2 + 1));
  const std::size_t room = kMaxSpecValues - out.size();
  if (!step.empty() && step.front() == '*') {
    const T factor = parse_number<T>(trim(step.substr(1)), "range factor");
    if (factor < 2)
      throw std::invalid_argument("range '" + std::string(item) + "' needs a factor of at least 2, got " +
                                  std::to_string(factor));
    if (lo < 1)
      throw std::invalid_argument("geometric range '" + std::string(item) + "' must start at 1 or more");
    std::size_t count = 0;
    for (T v = lo;; v *= factor) {
      if (++count > room) throw std::invalid_argument("range '" + std::string(item) + "' " + too_many());
      out.push_back(v);
      if (v > hi / factor) break;  // the next value would pass hi (or overflow)
    }
    return;
  }
  const T by = parse_number<T>(step, "range step");
  if (by <= 0)
    throw std::invalid_argument("range '" + std::string(item) + "' needs a step greater than 0, got " +
                                std::to_string(by));
  // Unsigned arithmetic: hi - lo cannot overflow there.
  const U span = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  if (span / static_cast<U>(by) >= room)
    throw std::invalid_argument("range '" + std::string(item) + "' " + too_many());
  for (U k = 0; k <= span / static_cast<U>(by); ++k)
    out.push_back(static_cast<T>(static_cast<U>(lo) + k * static_cast<U>(by)));
}

template <class T>
std::vector<T> parse_numbers(std::string_view text, char sep) {
  std::vector<T> values;
  for (std::string_view item : split_items(text, sep)) {
    append_item(item, values);
    if (values.size() > kMaxSpecValues) throw std::invalid_argument(too_many());
  }
  return values;
}

}  // namespace

std::vector<std::int64_t> parse_int_spec(std::string_view text, char list_separator) {
  return parse_numbers<std::int64_t>(text, list_separator);
}

std::vector<std::uint64_t> parse_uint_spec(std::string_view text, char list_separator) {
  return parse_numbers<std::uint64_t>(text, list_separator);
}

std::vector<std::string> parse_word_spec(std::string_view text, char list_separator) {
  std::vector<std::string> words;
  for (std::string_view item : split_items(text, list_separator)) words.emplace_back(item);
  return words;
}

std::vector<std::string> parse_scorer_spec(std::string_view text, char list_separator) {
  std::vector<std::string> names;
  const auto add = [&](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const std::string& word : parse_word_spec(text, list_separator)) {
    if (word == "all") {
      for (const ScorerInfo& info : scorer_table()) add(info.name);
      continue;
    }
    const auto& table = scorer_table();
    if (std::none_of(table.begin(), table.end(), [&](const ScorerInfo& info) { return word == info.name; }))
      throw std::invalid_argument(fmt::format("unknown scorer '{}'; known: all, {}", word, scorer_names()));
    add(word);
  }
  return names;
}

}  // namespace attnbench
