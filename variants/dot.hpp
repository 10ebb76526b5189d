// Projected dot-product scorer e_tj = (W s) . (U h_j) * scale.
#pragma once

#include <memory>

#include "core/scorer.hpp"

namespace attnbench {

// Parameters in creation order: W: Linear(D, A), U: Linear(E, A), no bias.
// scale 1 gives `dot`, 1/sqrt(A) gives `scaled_dot`.
std::unique_ptr<Scorer> make_dot(ParamSource& source, const ScorerShape& shape, bool scaled);

// Cost of one `score` step at p: q = W s, then q . k_j (and the scale) per position.
StageCost dot_score_cost(const Problem& p, bool scaled);

}  // namespace attnbench
