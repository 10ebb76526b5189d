#include "cli/problem_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "driver/grid.hpp"
#include "driver/value_spec.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

// The help text of a field's flag; the scorer's lists the scorers.
std::string help_text(std::string_view field, const char* description) {
  if (field == "scorer") return fmt::format("{}: {}", description, scorer_names());
  return description;
}

// The enum words of E as CLI11 converts them: an unknown word gets the one text of
// parse_choice<E>(), a known one becomes its enum value.
template <typename E>
void add_choice_conversion(CLI::Option* option) {
  std::map<std::string, E> words;
  for (std::string_view word : choice_words<E>()) words.emplace(word, parse_choice<E>(word));
  option->transform(CLI::CheckedTransformer(words).description(""));
  option->type_name("WORD");
  // Inserted in front of the transformer, so an unknown word gets this text.
  option->transform(CLI::Validator(
      [](std::string& word) {
        try {
          parse_choice<E>(word);
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      },
      fmt::format("{{{}}}", fmt::join(choice_words<E>(), ","))));
}

// A flag's integer text checked by the grid's own parser (driver/value_spec.hpp), so that
// probe and run word a bad number alike: "bad value 'abc': value 'abc' is not a whole number".
template <typename T>
CLI::Validator whole_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          std::size_t count = 0;
          bool in_range = true;
          if constexpr (std::is_unsigned_v<T>) {
            count = parse_uint_spec(text, ',').size();
          } else {
            const std::vector<std::int64_t> values = parse_int_spec(text, ',');
            count = values.size();
            in_range = count != 1 || std::in_range<T>(values.front());
          }
          if (count != 1) return fmt::format("bad value '{}': give one value", text);
          if (!in_range) return fmt::format("bad value '{}': value {} is out of range", text, text);
          return "";
        } catch (const std::invalid_argument& e) {
          return fmt::format("bad value '{}': {}", text, e.what());
        }
      },
      "");
}

template <typename T>
void add(CLI::App& app, std::string_view field, const char* flag, T& value, const char* description) {
  CLI::Option* option = app.add_option(flag, value, help_text(field, description));
  if constexpr (std::is_enum_v<T>) {
    option->default_str(to_string(value));
    add_choice_conversion<T>(option);
  } else {
    option->capture_default_str();
    if constexpr (std::is_integral_v<T>) option->check(whole_number<T>());
  }
}

}  // namespace

void add_problem_flags(CLI::App& app, ProblemFlags& flags, bool decoder_flags) {
  Problem& p = flags.problem;
#define ATTNBENCH_FIELD(name, flag, cpp_type, kind, default_value, decoder_only, description) \
  if (decoder_flags || !(decoder_only)) add(app, #name, flag, p.name, description);
#include "core/problem_fields.def"
}

void add_grid_flags(CLI::App& app, std::map<std::string, std::string>& specs) {
  const auto defaults = field_values(Problem{});
  std::size_t i = 0;
#define ATTNBENCH_FIELD(name, flag, cpp_type, kind, default_value, decoder_only, description)                    \
  app.add_option_function<std::string>(                                                                         \
         flag, [&specs](const std::string& spec) { specs[#name] = spec; }, help_text(#name, description))       \
      ->option_text(fmt::format("SPEC [{}]", std::string_view(#name) == "scorer" ? "all" : defaults[i].second)); \
  ++i;
#include "core/problem_fields.def"
}

Problem to_problem(const ProblemFlags& flags) {
  const Problem& p = flags.problem;
  find_scorer(p.scorer);
  check_sizes(p);  // the grid's wording: "--batch: bad value '0': must be a positive whole number"
  validate(p);
  return p;
}

std::vector<std::int64_t> parse_lengths(const std::string& text, const Problem& p) {
  if (text.empty()) return source_lengths(p);
  std::vector<std::int64_t> lengths;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || used == 0 || value < 1 || value > p.src_len)
      throw std::invalid_argument("--lengths: bad length '" + item + "'; each must be a whole number in 1.." +
                                  std::to_string(p.src_len) + " (--src-len)");
    lengths.push_back(value);
  }
  if (static_cast<std::int64_t>(lengths.size()) != p.batch)
    throw std::invalid_argument("--lengths: got " + std::to_string(lengths.size()) + " lengths for --batch " +
                                std::to_string(p.batch) + "; give one per example");
  return lengths;
}

}  // namespace attnbench
