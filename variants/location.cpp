// Luong's location-based scorer e_tj = (W_a s_{t-1})_j: the scores depend on the decoder
// state and the position only, never on the annotations H (the baseline that cannot
// look at the source). W_a: Linear(dec_dim, src_len); attn_dim is unused. Padded
// positions get scores too; the attention step masks them like every scorer's.
#include "core/fused_attend.hpp"
#include "core/fused_projection.hpp"
#include "core/linear_backward.hpp"
#include "core/scorer.hpp"
#include "variants/projected_keys.hpp"

#include <algorithm>

namespace attnbench {

namespace {

class LocationScorer final : public Scorer {
 public:
  LocationScorer(ParamSource& source, const ScorerShape& shape)
      : shape_(shape), W_(make_linear(source, shape.dec_dim, shape.src_len, false)) {}

  void build(OneDnnContext& ctx, Impl impl) override {
    if (impl == Impl::onednn) {
      query_op_ = LinearOp(ctx, shape_.batch, W_);
    } else {
      fused_query_op_ =
          FusedProjection(ctx, shape_.batch, W_, fused_step_threads(ctx.threads(), shape_, fused_score_work(shape_)));
      query_.assign(static_cast<std::size_t>(shape_.batch * shape_.src_len), 0.f);
    }
  }

  // No keys: the scores never look at H.
  void prepare(const float*) override {}

  void score(const float* s, float* e) override { query_op_.run(s, e); }

  void fused_query(const float* s, int part, int parts) override {
    fused_query_op_.run_part(s, query_.data(), part, parts);
  }

  bool fused_query_covers_part(int parts) const override { return fused_query_op_.splits_into(parts); }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b,
                       fused::PrefetchAlong /*next_pass*/) const override {
    const float* row = query_.data() + b * shape_.src_len;
    std::copy(row, row + len, e_b);
  }

  // The per-example rows: one copy per position (W_a s is fused_query()'s, before them).
  double fused_score_work(const ScorerShape& shape) const override {
    return static_cast<double>(shape.batch * shape.src_len);
  }

  std::vector<double> reference_score(std::span<const double> s, std::span<const double>) const override {
    return project_state(W_, s, shape_);
  }

  std::vector<ParamView> parameters() override {
    return {{"W_a.weight", {shape_.src_len, shape_.dec_dim}, W_.weight}};
  }

  void reload() override { query_op_.reload(); }

  void build_backward(OneDnnContext& ctx) override {
    query_back_ = LinearBackward(ctx, shape_.batch, shape_.dec_dim, shape_.src_len, false, false);
  }

  // e = W_a s: dW_a += de^T s, ds = de W_a.
  void backward_score(const float* s, const float* de, float* ds, ParamGrads grads) override {
    query_back_.run(s, de, W_.weight.data(), grads[0].data(), nullptr, ds);
  }

  // No keys: H gets no gradient through the scores (dH unchanged) and nothing is accumulated.
  void backward_keys(const float*, float*, ParamGrads) override {}

 private:
  ScorerShape shape_;
  LinearParams W_;
  LinearOp query_op_;
  LinearBackward query_back_;
  FusedProjection fused_query_op_;
  std::vector<float> query_;  // W_a s (B, L) of the last fused_query()
};

std::unique_ptr<Scorer> make_location(ParamSource& source, const ScorerShape& shape) {
  return std::make_unique<LocationScorer>(source, shape);
}

// No keys stage work: nothing is computed per sequence.
StageCost location_keys_cost(const Problem&) { return {}; }

// One step: W_a s, (B, D) x (D, L); the fused copy of each row is not counted.
StageCost location_score_cost(const Problem& p) {
  const CostSizes s(p);
  return linear_cost(s.B, s.D, s.L);
}

}  // namespace

ScorerInfo scorer_info_location() {
  return {"location", "e_tj = (W_a s_{t-1})_j   (position only, never looks at h_j)",
          "W_a: Linear(dec_dim, src_len); no bias (attn_dim unused)",
          "Luong, Pham, Manning 2015, arXiv:1508.04025 (location)", make_location,
          {{"W_a", "Linear", "dec_dim", "src_len", false}}, location_keys_cost, location_score_cost,
          score_then_attend};
}

}  // namespace attnbench
