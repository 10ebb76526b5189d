// Scaled dot product: the dot scorer divided by sqrt(attn_dim), which keeps the
// score variance, and so the softmax's entropy, independent of attn_dim.
#include "variants/dot.hpp"

namespace attnbench {

namespace {
std::unique_ptr<Scorer> make_scaled(ParamSource& source, const ScorerShape& shape) {
  return make_dot(source, shape, true);
}
}  // namespace

ScorerInfo scorer_info_scaled_dot() {
  return {"scaled_dot", "e_tj = (W s_{t-1}) . (U h_j) / sqrt(attn_dim)",
          "W: Linear(dec_dim, attn_dim), U: Linear(enc_dim, attn_dim); no bias",
          "Vaswani et al. 2017, arXiv:1706.03762, section 3.2.1", make_scaled,
          {{"W", "Linear", "dec_dim", "attn_dim", false}, {"U", "Linear", "enc_dim", "attn_dim", false}},
          dot_keys_cost, [](const Problem& p) { return dot_score_cost(p, true); }, dot_step_cost};
}

}  // namespace attnbench
