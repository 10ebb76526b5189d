// Luong's "general" scorer e_tj = s_{t-1} . (W h_j): keys W h_j are cached per sequence.
#include "core/fused_kernels.hpp"
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
  void fused_query(const float* s) override { state_ = s; }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b) const override {
    const std::int64_t L = shape_.src_len, D = shape_.dec_dim;
    if (bf16_keys_)
      fused::dot_rows(keys_bf16_.data() + b * L * D, state_ + b * D, len, D, e_b);
    else
      fused::dot_rows(keys_.data() + b * L * D, state_ + b * D, len, D, e_b);
  }

  std::vector<double> reference_score(std::span<const double> s, std::span<const double> H) const override {
    return BatchedDot::reference(project_annotations(W_, H, shape_), s, shape_.batch, shape_.src_len,
                                 shape_.dec_dim, 1.0);
  }

 private:
  ScorerShape shape_;
  LinearParams W_;
  LinearOp keys_op_;
  BatchedDot dot_;
  Impl impl_ = Impl::onednn;
  std::vector<float> keys_;
  bool bf16_keys_ = false;                // fused on a bf16 context: scores from keys_bf16_
  std::vector<std::uint16_t> keys_bf16_;  // the keys as bf16 (fused::to_bf16), per sequence
  const float* state_ = nullptr;  // the s of the last fused_query()
};

std::unique_ptr<Scorer> make_general(ParamSource& source, const ScorerShape& shape) {
  return std::make_unique<GeneralScorer>(source, shape);
}

}  // namespace

ScorerInfo scorer_info_general() {
  return {"general", "e_tj = s_{t-1} . (W h_j)", "W: Linear(enc_dim, dec_dim); no bias (attn_dim unused)",
          "Luong, Pham, Manning 2015, arXiv:1508.04025 (general)", make_general};
}

}  // namespace attnbench
