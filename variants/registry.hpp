// The table of scorers and lookup by name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/scorer.hpp"

namespace attnbench {

// Every scorer, in the order of variants/variants.def.
const std::vector<ScorerInfo>& scorer_table();

// The scorer called `name`; throws std::invalid_argument listing the known names.
const ScorerInfo& find_scorer(std::string_view name);

// "additive, additive_linear, ..." for messages and help text.
std::string scorer_names();

}  // namespace attnbench
