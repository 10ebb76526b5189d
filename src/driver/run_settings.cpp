#include "driver/run_settings.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attnbench {

namespace {

std::string checked_name(std::string_view text) {
  const bool ok = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
  if (!ok) throw std::invalid_argument("a name is letters, digits, '_', '-' and '.'");
  return std::string(text);
}

std::vector<std::string> stage_list(std::string_view text, char separator) {
  std::vector<std::string> named;
  for (std::size_t start = 0;;) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    const std::string name(text.substr(start, end - start));
    if (std::find(schema::kStages.begin(), schema::kStages.end(), name) == schema::kStages.end())
      throw std::invalid_argument("unknown stage '" + name + "'; known: " + fmt::format("{}", fmt::join(all_stages(), ", ")));
    named.push_back(name);
    if (end == text.size()) break;
    start = end + 1;
  }
  std::vector<std::string> stages;
  for (const std::string& stage : all_stages())
    if (std::find(named.begin(), named.end(), stage) != named.end()) stages.push_back(stage);
  return stages;
}

int repetitions(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1)
    throw std::invalid_argument("must be a whole number of at least 1");
  return value;
}

double seconds(std::string_view text) {
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const double value = copy.empty() ? 0.0 : std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || errno != 0 || !std::isfinite(value) || !(value > 0))
    throw std::invalid_argument("must be a positive number of seconds");
  return value;
}

std::string peer(std::string_view text) {
  if (text == "torch") return "torch";
  if (text == "none") return "";
  throw std::invalid_argument("unknown peer; known: torch, none");
}

}  // namespace

const std::vector<std::string>& setting_names() {
  static const std::vector<std::string> names = {"name", "stages", "repetitions", "min_time", "peer"};
  return names;
}

bool is_setting(std::string_view column) {
  return std::find(setting_names().begin(), setting_names().end(), column) != setting_names().end();
}

void set_setting(PointSettings& settings, std::string_view name, std::string_view text, char list_separator) {
  if (name == "name")
    settings.name = checked_name(text);
  else if (name == "stages")
    settings.bench.stages = stage_list(text, list_separator);
  else if (name == "repetitions")
    settings.bench.repetitions = repetitions(text);
  else if (name == "min_time")
    settings.bench.min_time = seconds(text);
  else if (name == "peer")
    settings.peer = peer(text);
  else
    throw std::invalid_argument("unknown setting; known: " + fmt::format("{}", fmt::join(setting_names(), ", ")));
}

}  // namespace attnbench
