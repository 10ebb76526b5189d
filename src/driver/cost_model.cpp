#include "driver/cost_model.hpp"

#include <stdexcept>
#include <string>

#include "variants/registry.hpp"

namespace attnbench {

namespace {

// One GRU step over `rows` examples: both gate matmuls and ~10 elementwise ops per output.
StageCost gru_step(double rows, double in, double hidden) {
  return linear_cost(rows, in, 3 * hidden) + linear_cost(rows, hidden, 3 * hidden) + StageCost{10 * rows * hidden, 0};
}

// The cost of each stage of driver/stages.def, named cost_<stage>.
StageCost cost_keys(const Problem& p) { return find_scorer(p.scorer).keys_cost(p); }

StageCost cost_score(const Problem& p) { return find_scorer(p.scorer).score_cost(p); }

// Masked softmax over (B, L), then c = alpha H with H streamed at streamed_element_bytes.
StageCost cost_attend(const Problem& p) {
  const CostSizes s(p);
  const StageCost softmax{5 * s.B * s.L, 4 * 2 * s.B * s.L};  // max, subtract, exp, sum, divide
  const StageCost context{2 * s.B * s.L * s.E,
                          streamed_element_bytes(p) * s.B * s.L * s.E + 4 * (s.B * s.L + s.B * s.E)};
  return softmax + context;
}

StageCost cost_step(const Problem& p) { return find_scorer(p.scorer).step_cost(p, cost_score(p), cost_attend(p)); }

StageCost cost_cell(const Problem& p) {
  const CostSizes s(p);
  return gru_step(s.B, s.M + s.E, s.D);
}

StageCost cost_output(const Problem& p) {
  const CostSizes s(p);
  return linear_cost(s.B, s.D + s.E, s.V);
}

StageCost cost_encoder(const Problem& p) {
  const CostSizes s(p);
  return 2 * s.L * gru_step(s.B, s.M, s.h) + linear_cost(s.B, s.h, s.D) + StageCost{0, 4 * s.B * s.L * s.M};
}

StageCost cost_decode(const Problem& p) {
  const CostSizes s(p);
  return cost_keys(p) + s.T * (cost_step(p) + cost_cell(p) + cost_output(p));
}

// The forward (encoder and decode) and a backward costed at twice the forward, the
// usual ratio for matmul-bound layers (one product each for d input and d weights).
StageCost cost_train_step(const Problem& p) { return 3 * (cost_encoder(p) + cost_decode(p)); }

}  // namespace

StageCost stage_cost(const Problem& p, std::string_view stage) {
#define ATTNBENCH_STAGE(name, per, timing, description) \
  if (stage == #name) return cost_##name(p);
#include "driver/stages.def"
  throw std::invalid_argument("unknown stage '" + std::string(stage) + "'");
}

}  // namespace attnbench
