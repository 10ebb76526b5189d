#include "driver/grid.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "driver/value_spec.hpp"

namespace attnbench {

namespace {

using Value = std::variant<std::int64_t, std::uint64_t, std::string>;

// One Problem field: how its spec parses, how a value is stored and printed.
struct Field {
  std::string name;
  std::vector<Value> (*parse)(std::string_view spec, char sep);  // throws std::invalid_argument
  void (*set)(Problem& p, const Value& v);
  std::string (*get)(const Problem& p);
};

template <auto Member>
Field int_field(std::string name) {
  using T = std::remove_cvref_t<decltype(std::declval<Problem&>().*Member)>;
  return {std::move(name),
          [](std::string_view spec, char sep) {
            std::vector<Value> values;
            if constexpr (std::is_unsigned_v<T>) {
              for (std::uint64_t v : parse_uint_spec(spec, sep)) values.emplace_back(v);
            } else {
              for (std::int64_t v : parse_int_spec(spec, sep)) {
                if (!std::in_range<T>(v))
                  throw std::invalid_argument(fmt::format("value {} is out of range", v));
                values.emplace_back(v);
              }
            }
            return values;
          },
          [](Problem& p, const Value& v) {
            if constexpr (std::is_unsigned_v<T>)
              p.*Member = static_cast<T>(std::get<std::uint64_t>(v));
            else
              p.*Member = static_cast<T>(std::get<std::int64_t>(v));
          },
          [](const Problem& p) { return std::to_string(p.*Member); }};
}

// A word field: its words checked by parse_choice<E>() (core/choices.hpp).
template <auto Member>
Field enum_field(std::string name) {
  using E = std::remove_cvref_t<decltype(std::declval<Problem&>().*Member)>;
  return {std::move(name),
          [](std::string_view spec, char sep) {
            std::vector<Value> values;
            for (std::string& word : parse_word_spec(spec, sep)) {
              parse_choice<E>(word);
              values.emplace_back(std::move(word));
            }
            return values;
          },
          [](Problem& p, const Value& v) { p.*Member = parse_choice<E>(std::get<std::string>(v)); },
          [](const Problem& p) { return to_string(p.*Member); }};
}

// A text field; the scorer's words are checked against the scorer list ("all" means every one).
template <auto Member>
Field text_field(std::string name) {
  return {std::move(name),
          [](std::string_view spec, char sep) {
            std::vector<Value> values;
            const bool scorer = Member == &Problem::scorer;
            for (std::string& word : scorer ? parse_scorer_spec(spec, sep) : parse_word_spec(spec, sep))
              values.emplace_back(std::move(word));
            return values;
          },
          [](Problem& p, const Value& v) { p.*Member = std::get<std::string>(v); },
          [](const Problem& p) { return p.*Member; }};
}

// The one list of Problem fields (core/problem_fields.def), in its order.
const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
#define ATTNBENCH_FIELD(name, flag, cpp_type, kind, default_value, decoder_only, description) \
  kind##_field<&Problem::name>(#name),
#include "core/problem_fields.def"
  };
  return table;
}

const Field* find_field(std::string_view name) {
  for (const Field& f : fields())
    if (f.name == name) return &f;
  return nullptr;
}

std::string known_fields() { return fmt::format("{}", fmt::join(problem_fields(), ", ")); }

// Identity of a point: every field but the scorer.
std::string point_key(const Problem& p) {
  std::string key;
  for (const Field& f : fields())
    if (f.name != "scorer") key += f.get(p) + '\x1f';
  return key;
}

}  // namespace

void check_sizes(const Problem& p, std::size_t block) {
  try {
    validate_sizes(p);
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    const std::size_t colon = message.find(": ");
    for (const Field& f : fields()) {
      if (colon == std::string::npos || message.compare(0, colon, flag_name(f.name)) != 0) continue;
      const std::string value = f.get(p);
      std::string reason = message.substr(colon + 2);
      const std::string got = ", got " + value;
      if (reason.size() > got.size() && reason.ends_with(got)) reason.resize(reason.size() - got.size());
      throw GridError(f.name, value, reason, block);
    }
    throw GridError("", "", message, block);
  }
}

namespace {

struct Dimension {
  const Field* field;
  std::vector<Value> values;
};

}  // namespace

GridError::GridError(std::string field, std::string value, std::string reason, std::size_t block)
    : std::invalid_argument(field.empty() ? reason : flag_name(field) + ": bad value '" + value + "': " + reason),
      field_(std::move(field)),
      value_(std::move(value)),
      reason_(std::move(reason)),
      block_(block) {}

const std::vector<std::string>& problem_fields() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Field& f : fields()) out.push_back(f.name);
    return out;
  }();
  return names;
}

std::string flag_name(std::string_view field) {
  std::string flag = "--" + std::string(field);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

Grid expand(const std::vector<GridBlock>& blocks, const Problem& defaults, char list_separator) {
  Grid grid;
  std::unordered_map<std::string, std::size_t> index;  // point_key -> position in grid
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    std::vector<std::string> scorers = {defaults.scorer};
    std::vector<Dimension> dims;
    std::size_t points = 1;
    for (const auto& [name, spec] : blocks[b].fields) {
      const Field* field = find_field(name);
      if (!field) throw GridError(name, spec, "unknown field; known: " + known_fields(), b);
      for (std::size_t seen = 0; seen < dims.size(); ++seen)
        if (dims[seen].field == field) throw GridError(name, spec, "field given twice", b);
      std::vector<Value> values;
      try {
        values = field->parse(spec, list_separator);
      } catch (const std::invalid_argument& e) {
        throw GridError(name, spec, e.what(), b);
      }
      dims.push_back({field, std::move(values)});
      if (field->name == "scorer") {
        scorers.clear();
        for (const Value& v : dims.back().values) scorers.push_back(std::get<std::string>(v));
        dims.back().values = {Value(scorers.front())};  // not a dimension of the product
      }
      points *= dims.back().values.size();
      if (points > kMaxBlockPoints)
        throw GridError(name, spec, fmt::format("the block expands to more than {} points", kMaxBlockPoints), b);
    }

    // Odometer over dims: the last dimension varies fastest.
    std::vector<std::size_t> at(dims.size(), 0);
    for (std::size_t n = 0; n < points; ++n) {
      Problem p = defaults;
      for (std::size_t d = 0; d < dims.size(); ++d) dims[d].field->set(p, dims[d].values[at[d]]);
      p.scorer = scorers.front();
      check_sizes(p, b);
      const auto [it, inserted] = index.try_emplace(point_key(p), grid.size());
      if (inserted) grid.push_back({p, {}});
      std::vector<std::string>& merged = grid[it->second].scorers;
      for (const std::string& s : scorers)
        if (std::find(merged.begin(), merged.end(), s) == merged.end()) merged.push_back(s);
      for (std::size_t d = dims.size(); d-- > 0;) {
        if (++at[d] < dims[d].values.size()) break;
        at[d] = 0;
      }
    }
  }
  return grid;
}

}  // namespace attnbench
