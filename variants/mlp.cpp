// OpenNMT-py's "mlp" scorer e_tj = v . tanh(W s_{t-1} + b + U h_j): Bahdanau's additive
// scorer with a bias on the query projection. Parameters in OpenNMT-py's GlobalAttention
// creation order: U (linear_context, no bias), W (linear_query, with bias), v (no bias).
#include "core/fused_attend.hpp"
#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
#include "core/linear_backward.hpp"
#include "core/scorer.hpp"
#include "variants/additive.hpp"
#include "variants/projected_keys.hpp"

#include <algorithm>
#include <cmath>

namespace attnbench {

namespace {

class MlpScorer final : public Scorer {
 public:
  MlpScorer(ParamSource& source, const ScorerShape& shape)
      : shape_(shape),
        U_(make_linear(source, shape.enc_dim, shape.attn_dim, false)),
        W_(make_linear(source, shape.dec_dim, shape.attn_dim, true)),
        v_(make_linear(source, shape.attn_dim, 1, false)) {}

  void build(OneDnnContext& ctx, Impl impl) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim;
    keys_op_ = LinearOp(ctx, B * L, U_);
    keys_.assign(static_cast<std::size_t>(B * L * A), 0.f);
    query_.assign(static_cast<std::size_t>(B * A), 0.f);
    bf16_keys_ = impl == Impl::fused && ctx.dtype() == DType::bf16;
    if (bf16_keys_) keys_bf16_.assign(keys_.size(), 0);
    if (impl == Impl::onednn) {
      query_op_ = LinearOp(ctx, B, W_);  // adds b
      add_op_ = BinaryAddOp(ctx, {B, L, A}, {B, 1, A}, dnnl::algorithm::eltwise_tanh);
      v_op_ = LinearOp(ctx, B * L, v_);
      hidden_.assign(keys_.size(), 0.f);
    } else {
      LinearParams weight_only = W_;
      weight_only.bias.clear();  // FusedProjection is bias-free; fused_query() adds b
      fused_query_op_ =
          FusedProjection(ctx, B, weight_only, fused_step_threads(ctx.threads(), shape_, fused_score_work(shape_)));
    }
  }

  void prepare(const float* H) override {
    keys_op_.run(H, keys_.data());
    if (bf16_keys_) fused::to_bf16(keys_.data(), static_cast<std::int64_t>(keys_.size()), keys_bf16_.data());
  }

  void score(const float* s, float* e) override {
    compute_hidden(s);
    v_op_.run(hidden_.data(), e);
  }

  void fused_query(const float* s, int part, int parts) override {
    const RowRange rows = fused_query_op_.run_part(s, query_.data(), part, parts);
    const std::int64_t A = shape_.attn_dim;
    for (std::int64_t b = rows.first; b < rows.first + rows.count; ++b)
      for (std::int64_t a = 0; a < A; ++a) query_[static_cast<std::size_t>(b * A + a)] += W_.bias[static_cast<std::size_t>(a)];
  }

  bool fused_query_covers_part(int parts) const override { return fused_query_op_.splits_into(parts); }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b, fused::PrefetchAlong next_pass) const override {
    fused_tanh_score_row(keys_.data(), bf16_keys_ ? keys_bf16_.data() : nullptr, query_.data(), v_.weight.data(),
                         shape_, b, len, e_b, next_pass);
  }

  // The per-example rows: B L A tanh terms, as additive's.
  double fused_score_work(const ScorerShape& shape) const override {
    return fused::tanh_term_macs() * static_cast<double>(shape.batch * shape.src_len) * static_cast<double>(shape.attn_dim);
  }

  std::vector<double> reference_score(std::span<const double> s, std::span<const double> H) const override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim;
    const std::vector<double> q = project_state(W_, s, shape_);  // W s + b
    const std::vector<double> k = project_annotations(U_, H, shape_);
    std::vector<double> e(static_cast<std::size_t>(B * L));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t j = 0; j < L; ++j) {
        double sum = 0.0;
        for (std::int64_t a = 0; a < A; ++a)
          sum += v_.weight[static_cast<std::size_t>(a)] *
                 std::tanh(k[static_cast<std::size_t>((b * L + j) * A + a)] + q[static_cast<std::size_t>(b * A + a)]);
        e[static_cast<std::size_t>(b * L + j)] = sum;
      }
    return e;
  }

  std::vector<ParamView> parameters() override {
    const std::int64_t D = shape_.dec_dim, E = shape_.enc_dim, A = shape_.attn_dim;
    return {{"U.weight", {A, E}, U_.weight},
            {"W.weight", {A, D}, W_.weight},
            {"W.bias", {A}, W_.bias},
            {"v.weight", {1, A}, v_.weight}};
  }

  void reload() override {
    keys_op_.reload();
    query_op_.reload();
    v_op_.reload();
  }

  void build_backward(OneDnnContext& ctx) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, E = shape_.enc_dim, D = shape_.dec_dim,
                       A = shape_.attn_dim;
    keys_back_ = LinearBackward(ctx, B * L, E, A, false, true);
    query_back_ = LinearBackward(ctx, B, D, A, true, false);
    v_back_ = LinearBackward(ctx, B * L, A, 1, false, false);
    dkeys_.assign(keys_.size(), 0.f);
    dquery_.assign(query_.size(), 0.f);
    training_ = true;
  }

  // With h = tanh(k_j + q), q = W s + b: dv += sum de_j h_j, dz = de_j v (1 - h^2),
  // dkeys += dz, dq = sum_j dz, then dW += dq^T s, db += dq's column sums and ds = dq W.
  void backward_score(const float* s, const float* de, float* ds, ParamGrads grads) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim;
    compute_hidden(s);
    v_back_.run(hidden_.data(), de, v_.weight.data(), grads[3].data(), nullptr, nullptr);
    additive_hidden_backward(hidden_.data(), de, v_.weight.data(), B, L, A, true, dkeys_.data(), dquery_.data());
    query_back_.run(s, dquery_.data(), W_.weight.data(), grads[1].data(), grads[2].data(), ds);
  }

  void backward_keys(const float* H, float* dH, ParamGrads grads) override {
    keys_back_.run(H, dkeys_.data(), U_.weight.data(), grads[0].data(), nullptr, dH);
    std::fill(dkeys_.begin(), dkeys_.end(), 0.f);
  }

  // q = W s + b, then hidden_ = tanh(keys_ + q): oneDNN's add with tanh for the textbook
  // score stage, the fused tanh once the scorer trains (build_backward()).
  void compute_hidden(const float* s) {
    query_op_.run(s, query_.data());
    if (training_)
      additive_hidden_forward(keys_.data(), query_.data(), shape_.batch, shape_.src_len, shape_.attn_dim, hidden_.data());
    else
      add_op_.run(keys_.data(), query_.data(), hidden_.data());
  }

 private:
  bool training_ = false;  // build_backward() was called
  ScorerShape shape_;
  LinearParams U_, W_, v_;
  LinearOp keys_op_, query_op_, v_op_;
  LinearBackward keys_back_, query_back_, v_back_;
  BinaryAddOp add_op_;
  FusedProjection fused_query_op_;
  std::vector<float> keys_, hidden_, query_, dkeys_, dquery_;
  bool bf16_keys_ = false;                // fused on a bf16 context: scores from keys_bf16_
  std::vector<std::uint16_t> keys_bf16_;  // the keys as bf16 (fused::to_bf16), per sequence
};

std::unique_ptr<Scorer> make_mlp(ParamSource& source, const ScorerShape& shape) {
  return std::make_unique<MlpScorer>(source, shape);
}

// One step: q = W s + b, then tanh(k_j + q) and v . per position.
StageCost mlp_score_cost(const Problem& p) {
  const CostSizes s(p);
  const StageCost query = linear_cost(s.B, s.D, s.A) + StageCost{s.B * s.A, 4 * s.A};  // + b
  const double hidden = s.B * s.L * s.A;
  // fused: v . tanh(k_j + q) per position, reading K once; no (B, L, A) tensor.
  if (p.impl == Impl::fused)
    return query + StageCost{4 * hidden, streamed_element_bytes(p) * hidden + 4 * (s.A + s.B * s.L)};
  // onednn: K + q and tanh over (B, L, A), written once and read again by v.
  return query + StageCost{2 * hidden, 4 * 2 * hidden} + linear_cost(s.B * s.L, s.A, 1);
}

}  // namespace

ScorerInfo scorer_info_mlp() {
  return {"mlp", "e_tj = v . tanh(W s_{t-1} + b + U h_j)",
          "U: Linear(enc_dim, attn_dim), W: Linear(dec_dim, attn_dim) with bias b, v: Linear(attn_dim, 1)",
          "OpenNMT-py GlobalAttention attn_type=\"mlp\" (Klein et al. 2017, arXiv:1701.02810)", make_mlp,
          {{"U", "Linear", "enc_dim", "attn_dim", false},
           {"W", "Linear", "dec_dim", "attn_dim", true},
           {"v", "Linear", "attn_dim", "1", false}},
          projected_keys_cost, mlp_score_cost, score_then_attend};
}

}  // namespace attnbench
