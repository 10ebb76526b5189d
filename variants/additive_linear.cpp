// The lesson's ablation: additive attention without tanh. Its W s term is constant
// over j and cancels in the softmax, so the alignment is the same at every step.
#include "variants/additive.hpp"

namespace attnbench {

namespace {
std::unique_ptr<Scorer> make_linear_additive(ParamSource& source, const ScorerShape& shape) {
  return make_additive(source, shape, false);
}
}  // namespace

ScorerInfo scorer_info_additive_linear() {
  return {"additive_linear", "e_tj = v . (W s_{t-1} + U h_j)   (additive without tanh)",
          "W: Linear(dec_dim, attn_dim), U: Linear(enc_dim, attn_dim), v: Linear(attn_dim, 1); no bias",
          "ablation from the lesson (Bahdanau et al. 2014 without the nonlinearity)", make_linear_additive,
          {{"W", "Linear", "dec_dim", "attn_dim", false}, {"U", "Linear", "enc_dim", "attn_dim", false}, {"v", "Linear", "attn_dim", "1", false}},
          [](const Problem& p) { return additive_keys_cost(p, false); },
          [](const Problem& p) { return additive_score_cost(p, false); }, linear_additive_step_cost};
}

}  // namespace attnbench
