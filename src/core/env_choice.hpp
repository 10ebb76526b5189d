// Settings read from environment variables that take one of a fixed list of values.
#pragma once

#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace attnbench {

// One value an environment variable may take, and what it means.
struct EnvValue {
  std::string_view value, meaning;
};

// The value of environment variable `variable`, "" when it is unset.
inline std::string_view env_value(const char* variable) {
  const char* value = std::getenv(variable);
  return value ? value : "";
}

// "" when `variable` is unset, empty or one of `values` (the first the default, which unset
// and empty also mean), else one line naming the variable, its bad value and every value.
// Example: constexpr EnvValue kValues[] = {{"best", "the default: ..."}, {"portable", "..."}};
//          env_choice_error("ATTNBENCH_FUSED_LOOPS", kValues).
inline std::string env_choice_error(const char* variable, std::span<const EnvValue> values) {
  const std::string_view value = env_value(variable);
  if (value.empty()) return "";
  std::string choices;
  std::size_t i = 0;
  for (const EnvValue& allowed : values) {
    if (value == allowed.value) return "";
    choices += std::string(i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + std::string(allowed.value) + " (" +
               std::string(allowed.meaning) + ")";
    ++i;
  }
  return std::string(variable) + ": bad value '" + std::string(value) + "': " + choices;
}

}  // namespace attnbench
