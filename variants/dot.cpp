#include "variants/dot.hpp"

#include <cmath>

#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
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

 private:
  ScorerShape shape_;
  double scale_;
  LinearParams W_, U_;
  LinearOp keys_op_, query_op_;
  BatchedDot dot_;
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

ScorerInfo scorer_info_dot() {
  return {"dot", "e_tj = (W s_{t-1}) . (U h_j)", "W: Linear(dec_dim, attn_dim), U: Linear(enc_dim, attn_dim); no bias",
          "Luong, Pham, Manning 2015, arXiv:1508.04025 (dot, on projections)", make_unscaled,
          {{"W", "Linear", "dec_dim", "attn_dim", false}, {"U", "Linear", "enc_dim", "attn_dim", false}}};
}

}  // namespace attnbench
