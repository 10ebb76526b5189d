#include "variants/additive.hpp"

#include <cmath>

#include "core/fused_attend.hpp"
#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
#include "variants/projected_keys.hpp"

namespace attnbench {

namespace {

class AdditiveScorer final : public Scorer {
 public:
  AdditiveScorer(ParamSource& source, const ScorerShape& shape, bool use_tanh)
      : shape_(shape),
        use_tanh_(use_tanh),
        W_(make_linear(source, shape.dec_dim, shape.attn_dim, false)),
        U_(make_linear(source, shape.enc_dim, shape.attn_dim, false)),
        v_(make_linear(source, shape.attn_dim, 1, false)) {}

  void build(OneDnnContext& ctx, Impl impl) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim;
    folded_ = impl == Impl::fused && !use_tanh_;
    bf16_keys_ = impl == Impl::fused && use_tanh_ && ctx.dtype() == DType::bf16;
    if (bf16_keys_) keys_bf16_.assign(static_cast<std::size_t>(B * L * A), 0);
    if (folded_) {
      // v.(W s + U h_j) = (W^T v).s + (U^T v).h_j: two vectors instead of keys and a query.
      key_weights_ = transposed_times_v(U_);
      query_weights_ = transposed_times_v(W_);
      key_scores_.assign(static_cast<std::size_t>(B * L), 0.f);
      query_scores_.assign(static_cast<std::size_t>(B), 0.f);
      return;
    }
    keys_op_ = LinearOp(ctx, B * L, U_);
    keys_.assign(static_cast<std::size_t>(B * L * A), 0.f);
    query_.assign(static_cast<std::size_t>(B * A), 0.f);
    if (impl == Impl::onednn || !use_tanh_) v_op_ = LinearOp(ctx, B * L, v_);
    if (!use_tanh_) key_scores_.assign(static_cast<std::size_t>(B * L), 0.f);
    if (impl == Impl::onednn) {
      query_op_ = LinearOp(ctx, B, W_);
      add_op_ = BinaryAddOp(ctx, {B, L, A}, {B, 1, A},
                            use_tanh_ ? dnnl::algorithm::eltwise_tanh : dnnl::algorithm::undef);
      hidden_.assign(keys_.size(), 0.f);
    } else {
      fused_query_op_ = FusedProjection(ctx, B, W_);
      if (!use_tanh_) query_scores_.assign(static_cast<std::size_t>(B), 0.f);
    }
  }

  void prepare(const float* H) override {
    if (folded_) {
      fused::dot_rows(H, key_weights_.data(), shape_.batch * shape_.src_len, shape_.enc_dim, key_scores_.data());
      return;
    }
    keys_op_.run(H, keys_.data());
    if (bf16_keys_) fused::to_bf16(keys_.data(), static_cast<std::int64_t>(keys_.size()), keys_bf16_.data());
    if (!use_tanh_) v_op_.run(keys_.data(), key_scores_.data());
  }

  // Without tanh, e_tj = v.U h_j + v.W s_{t-1}: the second term is the same for every j
  // and cancels in the softmax, so v.U h_j alone gives the weights (a static alignment).
  const float* alignment_logits() const override { return use_tanh_ ? nullptr : key_scores_.data(); }

  void score(const float* s, float* e) override {
    query_op_.run(s, query_.data());
    add_op_.run(keys_.data(), query_.data(), hidden_.data());
    v_op_.run(hidden_.data(), e);
  }

  void fused_query(const float* s) override {
    // Without tanh, v.(k_j + q) = v.k_j + v.q: v.q = (W^T v).s once per example.
    if (folded_)
      fused::dot_rows(s, query_weights_.data(), shape_.batch, shape_.dec_dim, query_scores_.data());
    else
      fused_query_op_.run(s, query_.data());
  }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b) const override {
    const std::int64_t L = shape_.src_len, A = shape_.attn_dim;
    if (bf16_keys_) {
      fused::tanh_dot_rows(keys_bf16_.data() + b * L * A, query_.data() + b * A, v_.weight.data(), len, A, e_b);
    } else if (use_tanh_) {
      fused::tanh_dot_rows(keys_.data() + b * L * A, query_.data() + b * A, v_.weight.data(), len, A, e_b);
    } else {
      const float* key_scores = key_scores_.data() + b * L;
      const float query_score = query_scores_[static_cast<std::size_t>(b)];
      for (std::int64_t j = 0; j < len; ++j) e_b[j] = key_scores[j] + query_score;
    }
  }

  // The per-example rows: additive B L A tanh terms, additive_linear one add per position.
  double fused_score_work(const ScorerShape& shape) const override {
    const double positions = static_cast<double>(shape.batch * shape.src_len);
    return use_tanh_ ? kTanhMacs * positions * static_cast<double>(shape.attn_dim) : positions;
  }

  // M^T v for M = W (A, D) or U (A, E): the vector whose dot with x is v.(M x), summed in double.
  std::vector<float> transposed_times_v(const LinearParams& M) const {
    std::vector<float> folded(static_cast<std::size_t>(M.in));
    for (std::int64_t i = 0; i < M.in; ++i) {
      double sum = 0.0;
      for (std::int64_t a = 0; a < M.out; ++a)
        sum += static_cast<double>(v_.weight[static_cast<std::size_t>(a)]) * M.weight[static_cast<std::size_t>(a * M.in + i)];
      folded[static_cast<std::size_t>(i)] = static_cast<float>(sum);
    }
    return folded;
  }

  std::vector<double> reference_score(std::span<const double> s, std::span<const double> H) const override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim;
    const std::vector<double> q = project_state(W_, s, shape_);
    const std::vector<double> k = project_annotations(U_, H, shape_);
    std::vector<double> e(static_cast<std::size_t>(B * L));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < L; ++j) {
        double sum = 0.0;
        for (std::int64_t a = 0; a < A; ++a) {
          const double z = k[static_cast<std::size_t>((b * L + j) * A + a)] + q[static_cast<std::size_t>(b * A + a)];
          sum += v_.weight[static_cast<std::size_t>(a)] * (use_tanh_ ? std::tanh(z) : z);
        }
        e[static_cast<std::size_t>(b * L + j)] = sum;
      }
    return e;
  }

 private:
  ScorerShape shape_;
  bool use_tanh_;
  bool folded_ = false;     // additive_linear, fused: scores from key_weights_ and query_weights_
  bool bf16_keys_ = false;  // additive, fused on a bf16 context: scores from keys_bf16_
  LinearParams W_, U_, v_;
  LinearOp keys_op_, query_op_, v_op_;
  BinaryAddOp add_op_;
  FusedProjection fused_query_op_;
  std::vector<float> keys_, hidden_, query_, key_scores_, query_scores_;
  std::vector<float> key_weights_, query_weights_;  // U^T v (E) and W^T v (D) when folded_
  std::vector<std::uint16_t> keys_bf16_;            // the keys as bf16 (fused::to_bf16), per sequence
};

std::unique_ptr<Scorer> make_tanh(ParamSource& source, const ScorerShape& shape) {
  return make_additive(source, shape, true);
}

}  // namespace

std::unique_ptr<Scorer> make_additive(ParamSource& source, const ScorerShape& shape, bool use_tanh) {
  return std::make_unique<AdditiveScorer>(source, shape, use_tanh);
}

ScorerInfo scorer_info_additive() {
  return {"additive", "e_tj = v . tanh(W s_{t-1} + U h_j)",
          "W: Linear(dec_dim, attn_dim), U: Linear(enc_dim, attn_dim), v: Linear(attn_dim, 1); no bias",
          "Bahdanau, Cho, Bengio 2014, arXiv:1409.0473", make_tanh};
}

}  // namespace attnbench
