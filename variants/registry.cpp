#include "variants/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace attnbench {

#define ATTNBENCH_SCORER(name) ScorerInfo scorer_info_##name();
#include "variants/variants.def"
#undef ATTNBENCH_SCORER

const std::vector<ScorerInfo>& scorer_table() {
  static const std::vector<ScorerInfo> table = {
#define ATTNBENCH_SCORER(name) scorer_info_##name(),
#include "variants/variants.def"
#undef ATTNBENCH_SCORER
  };
  return table;
}

std::string scorer_names() {
  std::vector<std::string_view> names;
  for (const ScorerInfo& info : scorer_table()) names.emplace_back(info.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

const ScorerInfo& find_scorer(std::string_view name) {
  for (const ScorerInfo& info : scorer_table())
    if (name == info.name) return info;
  throw std::invalid_argument(fmt::format("--scorer: unknown scorer '{}'; known: {}", name, scorer_names()));
}

}  // namespace attnbench
