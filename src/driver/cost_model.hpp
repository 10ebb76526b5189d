// Analytic work of one call of a timed stage: floating-point operations and the
// bytes of f32 tensors it must read and write at least once (README: "Cost model").
#pragma once

#include <string_view>

#include "core/problem.hpp"

namespace attnbench {

struct StageCost {
  double flops = 0;  // a multiply-add counts 2; add, tanh, exp, compare count 1
  double bytes = 0;  // compulsory traffic: every operand read once, every result written once
};

// Cost of `stage` (one of schema::kStages) for scorer p.scorer at sizes p.
// Example: stage_cost(p, "score") for dot is 2BDA + 2BLA flops.
StageCost stage_cost(const Problem& p, std::string_view stage);

// Whether a stage is timed once per sequence (keys, encoder, decode, train_step) rather than per step.
bool is_sequence_stage(std::string_view stage);

}  // namespace attnbench
