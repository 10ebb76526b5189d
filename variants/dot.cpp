#include "variants/dot.hpp"

#include <cmath>

#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
#include "core/linear_backward.hpp"
#include "variants/batched_dot.hpp"
#include "variants/projected_keys.hpp"

namespace attnbench {

namespace {

class DotScorer final : public Scorer {
 public:
  DotScorer(ParamSource& source, const ScorerShape& shape, bool scaled)
      : shape_(shape),
        scale_(scaled ? 1.0 / std::sqrt(static_cast<double>(shape.attn_dim)) : 1.0),
        W_(make_linear(source, shape.dec_dim, shape.attn_dim, false)),
        U_(make_linear(source, shape.enc_dim, shape.attn_dim, false)) {}

  void build(OneDnnContext& ctx, Impl impl) override {
    impl_ = impl;
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim;
    keys_op_ = LinearOp(ctx, B * L, U_);
    keys_.assign(static_cast<std::size_t>(B * L * A), 0.f);
    query_.assign(static_cast<std::size_t>(B * A), 0.f);
    if (impl == Impl::onednn) {
      query_op_ = LinearOp(ctx, B, W_);
      dot_ = BatchedDot(ctx, B, L, A, static_cast<float>(scale_));
    } else {
      fused_query_op_ = FusedProjection(ctx, B, W_, static_cast<float>(scale_));  // the scale folded into q
    }
  }

  void prepare(const float* H) override {
    keys_op_.run(H, keys_.data());
    if (impl_ == Impl::onednn) dot_.bind_keys(keys_.data());
  }

  void score(const float* s, float* e) override {
    query_op_.run(s, query_.data());
    dot_.run(query_.data(), e);
  }

  void fused_query(const float* s) override { fused_query_op_.run(s, query_.data()); }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b) const override {
    const std::int64_t L = shape_.src_len, A = shape_.attn_dim;
    fused::dot_rows(keys_.data() + b * L * A, query_.data() + b * A, len, A, e_b);
  }

  std::vector<double> reference_score(std::span<const double> s, std::span<const double> H) const override {
    return BatchedDot::reference(project_annotations(U_, H, shape_), project_state(W_, s, shape_), shape_.batch,
                                 shape_.src_len, shape_.attn_dim, scale_);
  }

  std::vector<ParamView> parameters() override {
    const std::int64_t D = shape_.dec_dim, E = shape_.enc_dim, A = shape_.attn_dim;
    return {{"W.weight", {A, D}, W_.weight}, {"U.weight", {A, E}, U_.weight}};
  }

  void reload() override {
    keys_op_.reload();
    query_op_.reload();
  }

  void build_backward(OneDnnContext& ctx) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, E = shape_.enc_dim, D = shape_.dec_dim,
                       A = shape_.attn_dim;
    query_back_ = LinearBackward(ctx, B, D, A, false, false);
    keys_back_ = LinearBackward(ctx, B * L, E, A, false, true);
    dot_back_ = BatchedDotBackward(ctx, B, L, A, static_cast<float>(scale_));
    dkeys_.assign(keys_.size(), 0.f);
    dquery_.assign(query_.size(), 0.f);
  }

  // q = W s; dq and dkeys from the batched dot's backward; dW += dq^T s, ds = dq W.
  void backward_score(const float* s, const float* de, float* ds, ParamGrads grads) override {
    query_op_.run(s, query_.data());
    dot_back_.run(keys_.data(), query_.data(), de, dquery_.data(), dkeys_.data());
    query_back_.run(s, dquery_.data(), W_.weight.data(), grads[0].data(), nullptr, ds);
  }

  void backward_keys(const float* H, float* dH, ParamGrads grads) override {
    keys_back_.run(H, dkeys_.data(), U_.weight.data(), grads[1].data(), nullptr, dH);
    std::fill(dkeys_.begin(), dkeys_.end(), 0.f);
  }

 private:
  ScorerShape shape_;
  double scale_;
  LinearParams W_, U_;
  LinearOp keys_op_, query_op_;
  BatchedDot dot_;
  LinearBackward query_back_, keys_back_;
  BatchedDotBackward dot_back_;
  std::vector<float> dkeys_, dquery_;
  Impl impl_ = Impl::onednn;
  FusedProjection fused_query_op_;
  std::vector<float> keys_, query_;
};

std::unique_ptr<Scorer> make_unscaled(ParamSource& source, const ScorerShape& shape) {
  return make_dot(source, shape, false);
}

}  // namespace

std::unique_ptr<Scorer> make_dot(ParamSource& source, const ScorerShape& shape, bool scaled) {
  return std::make_unique<DotScorer>(source, shape, scaled);
}

StageCost dot_score_cost(const Problem& p, bool scaled) {
  const CostSizes s(p);
  const double scale = scaled ? s.B * s.L : 0;
  return linear_cost(s.B, s.D, s.A) + StageCost{2 * s.B * s.L * s.A + scale, 4 * (s.B * s.L * s.A + s.B * s.L)};
}

ScorerInfo scorer_info_dot() {
  return {"dot", "e_tj = (W s_{t-1}) . (U h_j)", "W: Linear(dec_dim, attn_dim), U: Linear(enc_dim, attn_dim); no bias",
          "Luong, Pham, Manning 2015, arXiv:1508.04025 (dot, on projections)", make_unscaled,
          {{"W", "Linear", "dec_dim", "attn_dim", false}, {"U", "Linear", "enc_dim", "attn_dim", false}},
          projected_keys_cost, [](const Problem& p) { return dot_score_cost(p, false); }};
}

}  // namespace attnbench
