#include "variants/additive.hpp"

#include <algorithm>
#include <cmath>

#include "core/fused_attend.hpp"
#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
#include "core/linear_backward.hpp"
#include "variants/projected_keys.hpp"

namespace attnbench {

namespace {

// Elements of the (B, L, A) tensor from which the backward's loop runs on every thread.
constexpr std::int64_t kParallelBackwardWork = 128 * 1024;

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
      transposed_times_v(U_, key_weights_);
      transposed_times_v(W_, query_weights_);
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
      fused_query_op_ =
          FusedProjection(ctx, B, W_, fused_step_threads(ctx.threads(), shape_, fused_score_work(shape_)));
      if (!use_tanh_) query_scores_.assign(static_cast<std::size_t>(B), 0.f);
    }
  }

  void prepare(const float* H) override {
    if (training_linear_) transposed_times_v(W_, query_weights_);  // W changed since the last step
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
    if (training_linear_) {
      linear_scores_from_folded_query(s, e);
      return;
    }
    compute_hidden(s);
    v_op_.run(hidden_.data(), e);
  }

  void fused_query(const float* s, int part, int parts) override {
    if (!folded_) {
      fused_query_op_.run_part(s, query_.data(), part, parts);
      return;
    }
    // Without tanh, v.(k_j + q) = v.k_j + v.q: v.q = (W^T v).s once per example.
    const RowRange rows = even_part(shape_.batch, part, parts);
    fused::dot_rows(s + rows.first * shape_.dec_dim, query_weights_.data(), rows.count, shape_.dec_dim,
                    query_scores_.data() + rows.first);
  }

  bool fused_query_covers_part(int parts) const override { return folded_ || fused_query_op_.splits_into(parts); }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b, fused::PrefetchAlong next_pass) const override {
    if (use_tanh_) {
      fused_tanh_score_row(keys_.data(), bf16_keys_ ? keys_bf16_.data() : nullptr, query_.data(), v_.weight.data(),
                           shape_, b, len, e_b, next_pass);
    } else {
      const std::int64_t L = shape_.src_len;
      const float* key_scores = key_scores_.data() + b * L;
      const float query_score = query_scores_[static_cast<std::size_t>(b)];
      for (std::int64_t j = 0; j < len; ++j) e_b[j] = key_scores[j] + query_score;
    }
  }

  // The per-example rows: additive B L A tanh terms, additive_linear one add per position.
  double fused_score_work(const ScorerShape& shape) const override {
    const double positions = static_cast<double>(shape.batch * shape.src_len);
    return use_tanh_ ? fused::tanh_term_macs() * positions * static_cast<double>(shape.attn_dim) : positions;
  }

  // Writes M^T v for M = W (A, D) or U (A, E) into `folded` (resized to M.in once): the
  // vector whose dot with x is v.(M x), summed in double.
  void transposed_times_v(const LinearParams& M, std::vector<float>& folded) const {
    folded.resize(static_cast<std::size_t>(M.in));
    for (std::int64_t i = 0; i < M.in; ++i) {
      double sum = 0.0;
      for (std::int64_t a = 0; a < M.out; ++a)
        sum += static_cast<double>(v_.weight[static_cast<std::size_t>(a)]) * M.weight[static_cast<std::size_t>(a * M.in + i)];
      folded[static_cast<std::size_t>(i)] = static_cast<float>(sum);
    }
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

  std::vector<ParamView> parameters() override {
    const std::int64_t D = shape_.dec_dim, E = shape_.enc_dim, A = shape_.attn_dim;
    return {{"W.weight", {A, D}, W_.weight}, {"U.weight", {A, E}, U_.weight}, {"v.weight", {1, A}, v_.weight}};
  }

  void reload() override {
    keys_op_.reload();
    query_op_.reload();
    v_op_.reload();
  }

  void build_backward(OneDnnContext& ctx) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, E = shape_.enc_dim, D = shape_.dec_dim,
                       A = shape_.attn_dim;
    query_back_ = LinearBackward(ctx, B, D, A, false, false);
    keys_back_ = LinearBackward(ctx, B * L, E, A, false, true);
    v_back_ = LinearBackward(ctx, B * L, A, 1, false, false);
    dkeys_.assign(keys_.size(), 0.f);
    dquery_.assign(query_.size(), 0.f);
    training_ = true;
    training_linear_ = !use_tanh_;
    if (training_linear_) {
      query_weights_.assign(static_cast<std::size_t>(D), 0.f);
      de_sum_.assign(static_cast<std::size_t>(B * L), 0.f);
      state_sum_.assign(static_cast<std::size_t>(D), 0.f);
    }
  }

  // With z = k_j + q and h = act(z): dv += sum de_j h_j, dz = de_j v * act'(z) (tanh' = 1 - h^2),
  // dkeys += dz, dq = sum_j dz, then dW += dq^T s and ds = dq W.
  void backward_score(const float* s, const float* de, float* ds, ParamGrads grads) override {
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim;
    if (training_linear_) {
      linear_backward_score(s, de, ds);
      return;
    }
    compute_hidden(s);
    v_back_.run(hidden_.data(), de, v_.weight.data(), grads[2].data(), nullptr, nullptr);
    additive_hidden_backward(hidden_.data(), de, v_.weight.data(), B, L, A, use_tanh_, dkeys_.data(),
                             dquery_.data());
    query_back_.run(s, dquery_.data(), W_.weight.data(), grads[0].data(), nullptr, ds);
  }

  void backward_keys(const float* H, float* dH, ParamGrads grads) override {
    if (training_linear_) linear_backward_from_sums(grads);
    keys_back_.run(H, dkeys_.data(), U_.weight.data(), grads[1].data(), nullptr, dH);
    std::fill(dkeys_.begin(), dkeys_.end(), 0.f);
  }

  // q = W s, then hidden_ = act(keys_ + q): oneDNN's add (with its tanh) for the textbook
  // score stage, the fused tanh once the scorer trains (build_backward()).
  void compute_hidden(const float* s) {
    query_op_.run(s, query_.data());
    if (training_ && use_tanh_)
      additive_hidden_forward(keys_.data(), query_.data(), shape_.batch, shape_.src_len, shape_.attn_dim, hidden_.data());
    else
      add_op_.run(keys_.data(), query_.data(), hidden_.data());
  }

  // Training without tanh, by the algebra of e_bj = v.k_bj + (W^T v).s_b rather than the
  // (B, L, A) tensor: with sigma_b = sum_j de_bj, the step's dq_b = sigma_b v, so
  // ds_b = sigma_b W^T v, dW = v (x) sum_b sigma_b s_b, dv = sum_bj de_bj k_bj + W sum_b sigma_b s_b
  // and dkeys_bj = de_bj v: the steps only add up de (B, L) and sum_b sigma_b s_b (D).
  void linear_scores_from_folded_query(const float* s, float* e) const {
    const std::int64_t B = shape_.batch, L = shape_.src_len, D = shape_.dec_dim;
    for (std::int64_t b = 0; b < B; ++b) {
      float query_score = 0.f;
      for (std::int64_t d = 0; d < D; ++d) query_score += query_weights_[static_cast<std::size_t>(d)] * s[b * D + d];
      for (std::int64_t j = 0; j < L; ++j) e[b * L + j] = key_scores_[static_cast<std::size_t>(b * L + j)] + query_score;
    }
  }

  void linear_backward_score(const float* s, const float* de, float* ds) {
    const std::int64_t B = shape_.batch, L = shape_.src_len, D = shape_.dec_dim;
    for (std::int64_t b = 0; b < B; ++b) {
      float sigma = 0.f;
      for (std::int64_t j = 0; j < L; ++j) {
        sigma += de[b * L + j];
        de_sum_[static_cast<std::size_t>(b * L + j)] += de[b * L + j];
      }
      for (std::int64_t d = 0; d < D; ++d) {
        state_sum_[static_cast<std::size_t>(d)] += sigma * s[b * D + d];
        ds[b * D + d] = sigma * query_weights_[static_cast<std::size_t>(d)];
      }
    }
  }

  // Adds dW and dv from the sums, fills dkeys_ = de_sum (x) v for backward_keys, and clears the sums.
  void linear_backward_from_sums(ParamGrads grads) {
    const std::int64_t B = shape_.batch, L = shape_.src_len, D = shape_.dec_dim, A = shape_.attn_dim;
    v_back_.run(keys_.data(), de_sum_.data(), v_.weight.data(), grads[2].data(), nullptr, nullptr);
    for (std::int64_t a = 0; a < A; ++a) {
      const float va = v_.weight[static_cast<std::size_t>(a)];
      const float* W_row = W_.weight.data() + a * D;
      float* dW_row = grads[0].data() + a * D;
      float W_times_sum = 0.f;
      for (std::int64_t d = 0; d < D; ++d) {
        dW_row[d] += va * state_sum_[static_cast<std::size_t>(d)];
        W_times_sum += W_row[d] * state_sum_[static_cast<std::size_t>(d)];
      }
      grads[2][static_cast<std::size_t>(a)] += W_times_sum;
    }
    for (std::int64_t r = 0; r < B * L; ++r)
      for (std::int64_t a = 0; a < A; ++a)
        dkeys_[static_cast<std::size_t>(r * A + a)] = de_sum_[static_cast<std::size_t>(r)] * v_.weight[static_cast<std::size_t>(a)];
    std::fill(de_sum_.begin(), de_sum_.end(), 0.f);
    std::fill(state_sum_.begin(), state_sum_.end(), 0.f);
  }

 private:
  ScorerShape shape_;
  bool use_tanh_;
  bool training_ = false;         // build_backward() was called
  bool training_linear_ = false;  // additive_linear with build_backward(): scores and gradients by the algebra above
  bool folded_ = false;     // additive_linear, fused: scores from key_weights_ and query_weights_
  bool bf16_keys_ = false;  // additive, fused on a bf16 context: scores from keys_bf16_
  LinearParams W_, U_, v_;
  LinearOp keys_op_, query_op_, v_op_;
  LinearBackward query_back_, keys_back_, v_back_;
  std::vector<float> dkeys_, dquery_;
  BinaryAddOp add_op_;
  FusedProjection fused_query_op_;
  std::vector<float> keys_, hidden_, query_, key_scores_, query_scores_;
  std::vector<float> key_weights_, query_weights_;  // U^T v (E) and W^T v (D) when folded_ (W^T v also when training_linear_)
  std::vector<float> de_sum_, state_sum_;           // training_linear_: sum over steps of de (B, L) and of sigma_b s_b (D)
  std::vector<std::uint16_t> keys_bf16_;            // the keys as bf16 (fused::to_bf16), per sequence
};

std::unique_ptr<Scorer> make_tanh(ParamSource& source, const ScorerShape& shape) {
  return make_additive(source, shape, true);
}

}  // namespace

void fused_tanh_score_row(const float* keys, const std::uint16_t* keys_bf16, const float* query, const float* v,
                          const ScorerShape& shape, std::int64_t b, std::int64_t len, float* e_b,
                          fused::PrefetchAlong next_pass) {
  const std::int64_t L = shape.src_len, A = shape.attn_dim;
  const std::int64_t readable = streams_keys(shape, keys_bf16 ? DType::bf16 : DType::f32) ? (shape.batch - b) * L : 0;
  if (keys_bf16)
    fused::tanh_dot_rows(keys_bf16 + b * L * A, query + b * A, v, len, A, e_b, readable, next_pass);
  else
    fused::tanh_dot_rows(keys + b * L * A, query + b * A, v, len, A, e_b, readable, next_pass);
}

void additive_hidden_forward(const float* keys, const float* query, std::int64_t B, std::int64_t L, std::int64_t A,
                             float* hidden) {
#pragma omp parallel for schedule(static) if (B * L * A >= kParallelBackwardWork)
  for (std::int64_t b = 0; b < B; ++b) fused::add_tanh_rows(keys + b * L * A, query + b * A, L, A, hidden + b * L * A);
}

void additive_hidden_backward(const float* hidden, const float* de, const float* v, std::int64_t B, std::int64_t L,
                              std::int64_t A, bool use_tanh, float* dkeys, float* dquery) {
#pragma omp parallel for schedule(static) if (B * L * A >= kParallelBackwardWork)
  for (std::int64_t b = 0; b < B; ++b) {
    float* dq = dquery + b * A;
    std::fill_n(dq, A, 0.f);
    for (std::int64_t j = 0; j < L; ++j) {
      const float g = de[b * L + j];
      const float* h = hidden + (b * L + j) * A;
      float* dk = dkeys + (b * L + j) * A;
      for (std::int64_t a = 0; a < A; ++a) {
        const float dz = use_tanh ? g * v[a] * (1.f - h[a] * h[a]) : g * v[a];
        dk[a] += dz;
        dq[a] += dz;
      }
    }
  }
}

std::unique_ptr<Scorer> make_additive(ParamSource& source, const ScorerShape& shape, bool use_tanh) {
  return std::make_unique<AdditiveScorer>(source, shape, use_tanh);
}

StageCost additive_keys_cost(const Problem& p, bool use_tanh) {
  if (p.impl == Impl::onednn || use_tanh) return projected_keys_cost(p);
  const CostSizes s(p);
  return linear_cost(s.B * s.L, s.E, 1);  // (U^T v) . h_j
}

StageCost additive_score_cost(const Problem& p, bool use_tanh) {
  const CostSizes s(p);
  // fused additive_linear: (W^T v) . s per example, plus the key score per position.
  if (p.impl == Impl::fused && !use_tanh) return linear_cost(s.B, s.D, 1) + StageCost{s.B * s.L, 4 * 2 * s.B * s.L};
  const StageCost query = linear_cost(s.B, s.D, s.A);
  const double hidden = s.B * s.L * s.A;
  const double elementwise = (use_tanh ? 2 : 1) * hidden;  // K + q, and tanh as one flop
  // fused: v . tanh(k_j + q) per position, reading K once; no (B, L, A) tensor.
  if (p.impl == Impl::fused)
    return query + StageCost{elementwise + 2 * hidden, streamed_element_bytes(p) * hidden + 4 * (s.A + s.B * s.L)};
  // onednn: K + q (and tanh) over (B, L, A), written once and read again by v.
  return query + StageCost{elementwise, 4 * 2 * hidden} + linear_cost(s.B * s.L, s.A, 1);
}

StageCost linear_additive_step_cost(const Problem& p, StageCost score, StageCost attend) {
  if (p.impl == Impl::onednn) return score + attend;
  const CostSizes s(p);
  return score + StageCost{0, 4 * (s.B * s.L + s.B * s.E)};
}

ScorerInfo scorer_info_additive() {
  return {"additive", "e_tj = v . tanh(W s_{t-1} + U h_j)",
          "W: Linear(dec_dim, attn_dim), U: Linear(enc_dim, attn_dim), v: Linear(attn_dim, 1); no bias",
          "Bahdanau, Cho, Bengio 2014, arXiv:1409.0473", make_tanh,
          {{"W", "Linear", "dec_dim", "attn_dim", false}, {"U", "Linear", "enc_dim", "attn_dim", false}, {"v", "Linear", "attn_dim", "1", false}},
          [](const Problem& p) { return additive_keys_cost(p, true); },
          [](const Problem& p) { return additive_score_cost(p, true); }, score_then_attend};
}

}  // namespace attnbench
