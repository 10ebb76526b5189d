// Analytic work of one call of a timed stage (driver/stages.def): floating-point
// operations and the bytes of the tensors it must read and write at least once
// (README: "Cost model"). The scorer's own stages (keys, score, step from score and
// attend) come from its ScorerInfo; this file names no scorer.
#pragma once

#include <string_view>

#include "core/problem.hpp"
#include "core/stage_cost.hpp"

namespace attnbench {

// Cost of `stage` (one of driver/stages.def) for scorer p.scorer at sizes p. Throws
// std::invalid_argument for an unknown stage or scorer.
// Example: stage_cost(p, "score") for dot is 2BDA + 2BLA flops.
StageCost stage_cost(const Problem& p, std::string_view stage);

}  // namespace attnbench
