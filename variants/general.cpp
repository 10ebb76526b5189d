// Luong's "general" scorer e_tj = s_{t-1} . (W h_j): keys W h_j are cached per sequence.
#include <algorithm>

#include "core/fused_kernels.hpp"
#include "core/linear_backward.hpp"
#include "core/scorer.hpp"
#include "variants/batched_dot.hpp"
#include "variants/projected_keys.hpp"

namespace attnbench {

namespace {

class GeneralScorer final : public Scorer {
 public:
  GeneralScorer(ParamSource& source, const ScorerShape& shape)
      : shape_(shape), W_(make_linear(source, shape.enc_dim, shape.dec_dim, false)) {}

  void build(OneDnnContext& ctx, Impl impl) override {
    impl_ = impl;
    const std::int64_t B = shape_.batch, L = shape_.src_len, D = shape_.dec_dim;
    keys_op_ = LinearOp(ctx, B * L, W_);
    keys_.assign(static_cast<std::size_t>(B * L * D), 0.f);
    if (impl == Impl::onednn) dot_ = BatchedDot(ctx, B, L, D, 1.f);
    bf16_keys_ = impl == Impl::fused && ctx.dtype() == DType::bf16;
    if (bf16_keys_) keys_bf16_.assign(keys_.size(), 0);
  }

  void prepare(const float* H) override {
    keys_op_.run(H, keys_.data());
    if (impl_ == Impl::onednn) dot_.bind_keys(keys_.data());
    if (bf16_keys_) fused::to_bf16(keys_.data(), static_cast<std::int64_t>(keys_.size()), keys_bf16_.data());
  }

  void score(const float* s, float* e) override { dot_.run(s, e); }

  // The query is s itself: nothing to compute, only to remember.
  void fused_query(const float* s, int /*part*/, int /*parts*/) override { state_.remember(s); }
  bool fused_query_covers_part(int /*parts*/) const override { return true; }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b,
                       fused::PrefetchAlong /*next_pass*/) const override {
    const std::int64_t L = shape_.src_len, D = shape_.dec_dim;
    if (bf16_keys_)
      fused::dot_rows(keys_bf16_.data() + b * L * D, state_.row(b, D), len, D, e_b);
    else
      fused::dot_rows(keys_.data() + b * L * D, state_.row(b, D), len, D, e_b);
  }

  // The per-example rows: B L D multiply-adds (attn_dim is unused).
  double fused_score_work(const ScorerShape& shape) const override {
    return static_cast<double>(shape.batch * shape.src_len) * static_cast<double>(shape.dec_dim);
  }

  std::vector<double> reference_score(std::span<const double> s, std::span<const double> H) const override {
    return BatchedDot::reference(project_annotations(W_, H, shape_), s, shape_.batch, shape_.src_len,
                                 shape_.dec_dim, 1.0);
  }

  std::vector<ParamView> parameters() override {
    return {{"W.weight", {shape_.dec_dim, shape_.enc_dim}, W_.weight}};
  }

  void reload() override { keys_op_.reload(); }

  void build_backward(OneDnnContext& ctx) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, E = shape_.enc_dim, D = shape_.dec_dim;
    keys_back_ = LinearBackward(ctx, B * L, E, D, false, true);
    dot_back_ = BatchedDotBackward(ctx, B, L, D, 1.f);
    dkeys_.assign(keys_.size(), 0.f);
  }

  // The query is s: the batched dot's dquery is ds itself.
  void backward_score(const float* s, const float* de, float* ds, ParamGrads) override {
    dot_back_.run(keys_.data(), s, de, ds, dkeys_.data());
  }

  void backward_keys(const float* H, float* dH, ParamGrads grads) override {
    keys_back_.run(H, dkeys_.data(), W_.weight.data(), grads[0].data(), nullptr, dH);
    std::fill(dkeys_.begin(), dkeys_.end(), 0.f);
  }

 private:
  ScorerShape shape_;
  LinearParams W_;
  LinearOp keys_op_;
  BatchedDot dot_;
  LinearBackward keys_back_;
  BatchedDotBackward dot_back_;
  std::vector<float> dkeys_;
  Impl impl_ = Impl::onednn;
  std::vector<float> keys_;
  bool bf16_keys_ = false;                // fused on a bf16 context: scores from keys_bf16_
  std::vector<std::uint16_t> keys_bf16_;  // the keys as bf16 (fused::to_bf16), per sequence
  StateQuery state_;  // the s of the last fused_query()
};

std::unique_ptr<Scorer> make_general(ParamSource& source, const ScorerShape& shape) {
  return std::make_unique<GeneralScorer>(source, shape);
}

}  // namespace

ScorerInfo scorer_info_general() {
  return {"general", "e_tj = s_{t-1} . (W h_j)", "W: Linear(enc_dim, dec_dim); no bias (attn_dim unused)",
          "Luong, Pham, Manning 2015, arXiv:1508.04025 (general)", make_general,
          {{"W", "Linear", "enc_dim", "dec_dim", false}}, state_keys_cost, state_keys_score_cost, score_then_attend};
}

}  // namespace attnbench
