#include "variants/registry.hpp"

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
  std::string names;
  for (const ScorerInfo& info : scorer_table()) names += (names.empty() ? "" : ", ") + std::string(info.name);
  return names;
}

const ScorerInfo& find_scorer(std::string_view name) {
  for (const ScorerInfo& info : scorer_table())
    if (name == info.name) return info;
  throw std::invalid_argument("--scorer: unknown scorer '" + std::string(name) + "'; known: " + scorer_names());
}

}  // namespace attnbench
