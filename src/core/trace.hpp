// Everything one decode produced, in double, for checks and for printing.
#pragma once

#include <vector>

namespace attnbench {

// Tensors of decode step t (row-major): scores and weights (B, L), context (B, E),
// state s_t (B, D), logits (B, vocab). Masked scores are -inf.
struct StepRecord {
  std::vector<double> scores, weights, context, state, logits;
};

struct DecodeTrace {
  std::vector<double> annotations;    // H (B, L, E)
  std::vector<double> initial_state;  // s_0 (B, D)
  std::vector<StepRecord> steps;
};

}  // namespace attnbench
