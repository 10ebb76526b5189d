// Bahdanau's additive scorer e_tj = v . act(W s + U h_j), with act = tanh or identity.
#pragma once

#include <memory>

#include "core/matmul_op.hpp"
#include "core/scorer.hpp"

namespace attnbench {

// Parameters in creation order: W: Linear(D, A), U: Linear(E, A), v: Linear(A, 1), no bias.
std::unique_ptr<Scorer> make_additive(ParamSource& source, const ScorerShape& shape, bool use_tanh);

// Cost of one `score` step at p: q = W s, then act(k_j + q) and v . over (B, L, A).
StageCost additive_score_cost(const Problem& p, bool use_tanh);

}  // namespace attnbench
