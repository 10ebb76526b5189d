#include "variants/dot.hpp"

#include <algorithm>
#include <cmath>

#include "core/fused_attend.hpp"
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
    path_ = impl == Impl::fused ? fused_dot_path(shape_) : DotPath::keys;
    bf16_rows_ = impl == Impl::fused && ctx.dtype() == DType::bf16;
    const std::int64_t B = shape_.batch, L = shape_.src_len, A = shape_.attn_dim, E = shape_.enc_dim;
    const int step_threads = fused_step_threads(ctx.threads(), shape_, fused_score_work(shape_));
    if (bf16_rows_) rows_bf16_.assign(static_cast<std::size_t>(B * L * row_width()), 0);
    if (path_ == DotPath::annotations) {
      // e_j = (scale U^T W s) . h_j: one (E, D) matrix, then no keys at all.
      fused_query_op_ = FusedProjection(ctx, B, folded_query_weights(), step_threads);
      query_.assign(static_cast<std::size_t>(B * E), 0.f);
      return;
    }
    if (path_ == DotPath::state_keys) {
      // e_j = s . (scale W^T U h_j): keys of width D, and s is the query.
      keys_op_ = LinearOp(ctx, B * L, folded_key_weights());
      keys_.assign(static_cast<std::size_t>(B * L * shape_.dec_dim), 0.f);
      return;
    }
    keys_op_ = LinearOp(ctx, B * L, U_);
    keys_.assign(static_cast<std::size_t>(B * L * A), 0.f);
    query_.assign(static_cast<std::size_t>(B * A), 0.f);
    if (impl == Impl::onednn) {
      query_op_ = LinearOp(ctx, B, W_);
      dot_ = BatchedDot(ctx, B, L, A, static_cast<float>(scale_));
    } else {
      fused_query_op_ = FusedProjection(ctx, B, W_, step_threads, static_cast<float>(scale_));  // the scale in q
    }
  }

  void prepare(const float* H) override {
    annotations_ = H;
    if (path_ != DotPath::annotations) keys_op_.run(H, keys_.data());
    if (impl_ == Impl::onednn) dot_.bind_keys(keys_.data());
    if (bf16_rows_)
      fused::to_bf16(path_ == DotPath::annotations ? H : keys_.data(), static_cast<std::int64_t>(rows_bf16_.size()),
                     rows_bf16_.data());
  }

  void score(const float* s, float* e) override {
    query_op_.run(s, query_.data());
    dot_.run(query_.data(), e);
  }

  void fused_query(const float* s, int part, int parts) override {
    if (path_ != DotPath::state_keys)
      fused_query_op_.run_part(s, query_.data(), part, parts);
    else
      state_.remember(s);
  }

  bool fused_query_covers_part(int parts) const override {
    return path_ == DotPath::state_keys || fused_query_op_.splits_into(parts);
  }

  void fused_score_row(std::int64_t b, std::int64_t len, float* e_b,
                       fused::PrefetchAlong /*next_pass*/) const override {
    const std::int64_t L = shape_.src_len, width = row_width();
    const float* q = path_ == DotPath::state_keys ? state_.row(b, width) : query_.data() + b * width;
    if (bf16_rows_)
      fused::dot_rows(rows_bf16_.data() + b * L * width, q, len, width, e_b);
    else
      fused::dot_rows((path_ == DotPath::annotations ? annotations_ : keys_.data()) + b * L * width, q, len, width, e_b);
  }

  // The per-example rows: B L times the width of the rows the path scores.
  double fused_score_work(const ScorerShape& shape) const override {
    return static_cast<double>(shape.batch * shape.src_len) * static_cast<double>(scored_width(shape, fused_dot_path(shape)));
  }

  const std::uint16_t* fused_annotations_bf16() const override {
    return bf16_rows_ && path_ == DotPath::annotations ? rows_bf16_.data() : nullptr;
  }

  // The width of the rows a path scores: A (keys), D (state keys) or E (H).
  static std::int64_t scored_width(const ScorerShape& shape, DotPath path) {
    return path == DotPath::keys ? shape.attn_dim : path == DotPath::state_keys ? shape.dec_dim : shape.enc_dim;
  }
  std::int64_t row_width() const { return scored_width(shape_, path_); }

  // scale W^T U as the weight (D, E) of a Linear(E, D): folded_query_weights() transposed.
  LinearParams folded_key_weights() const {
    const std::int64_t D = shape_.dec_dim, E = shape_.enc_dim;
    const LinearParams query = folded_query_weights();
    LinearParams keys{E, D, std::vector<float>(query.weight.size()), {}};
    for (std::int64_t i = 0; i < E; ++i)
      for (std::int64_t d = 0; d < D; ++d)
        keys.weight[static_cast<std::size_t>(d * E + i)] = query.weight[static_cast<std::size_t>(i * D + d)];
    return keys;
  }

  // scale U^T W as the weight (E, D) of a Linear(D, E): row i is scale sum_a U[a, i] W[a, :],
  // summed in double.
  LinearParams folded_query_weights() const {
    const std::int64_t A = shape_.attn_dim, D = shape_.dec_dim, E = shape_.enc_dim;
    LinearParams folded{D, E, std::vector<float>(static_cast<std::size_t>(E * D)), {}};
    std::vector<double> row(static_cast<std::size_t>(D));
    for (std::int64_t i = 0; i < E; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (std::int64_t a = 0; a < A; ++a) {
        const double u = U_.weight[static_cast<std::size_t>(a * E + i)];
        for (std::int64_t d = 0; d < D; ++d) row[static_cast<std::size_t>(d)] += u * W_.weight[static_cast<std::size_t>(a * D + d)];
      }
      for (std::int64_t d = 0; d < D; ++d)
        folded.weight[static_cast<std::size_t>(i * D + d)] = static_cast<float>(scale_ * row[static_cast<std::size_t>(d)]);
    }
    return folded;
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
  DotPath path_ = DotPath::keys;  // onednn: always keys; fused: fused_dot_path
  bool bf16_rows_ = false;        // fused on a bf16 context: rows_bf16_ holds the scored rows
  std::vector<std::uint16_t> rows_bf16_;  // H or the keys as bf16 (fused::to_bf16), per sequence
  FusedProjection fused_query_op_;
  std::vector<float> keys_, query_;  // keys_: (B, L, A), or (B, L, D) for state keys; query_: (B, A) or (B, E)
  const float* annotations_ = nullptr;  // H of the last prepare()
  StateQuery state_;                    // the s of the last fused_query() (state keys)
};

std::unique_ptr<Scorer> make_unscaled(ParamSource& source, const ScorerShape& shape) {
  return make_dot(source, shape, false);
}

}  // namespace

DotPath fused_dot_path(const ScorerShape& shape) {
  DotPath best = DotPath::keys;
  for (const DotPath path : {DotPath::state_keys, DotPath::annotations}) {
    if (path == DotPath::state_keys && shape.dec_dim > shape.attn_dim) continue;
    if (dot_step_work(shape, path).cost() < dot_step_work(shape, best).cost()) best = path;
  }
  return best;
}

DotStepWork dot_step_work(const ScorerShape& shape, DotPath path) {
  const double B = static_cast<double>(shape.batch), L = static_cast<double>(shape.src_len),
               E = static_cast<double>(shape.enc_dim), D = static_cast<double>(shape.dec_dim),
               A = static_cast<double>(shape.attn_dim);
  constexpr double kFloatBytes = sizeof(float);
  switch (path) {
    case DotPath::annotations:
      return {E * D, B * D * E + B * L * E, macs_per_float_read(B * L * E * kFloatBytes)};
    case DotPath::state_keys:
      return {B * L * D, B * L * D, macs_per_float_read(B * L * (D + E) * kFloatBytes)};
    case DotPath::keys:
      break;
  }
  return {A * D + B * L * A, B * D * A + B * L * A, macs_per_float_read(B * L * (A + E) * kFloatBytes)};
}

double macs_per_float_read(double step_bytes) {
  return step_bytes <= kCachedStepBytes ? kMacsPerCachedFloatRead : kMacsPerFloatRead;
}

std::unique_ptr<Scorer> make_dot(ParamSource& source, const ScorerShape& shape, bool scaled) {
  return std::make_unique<DotScorer>(source, shape, scaled);
}

namespace {

// The algorithm of p's step: fused_dot_path for the fused impl, the keys for oneDNN.
DotPath step_path(const Problem& p) {
  return p.impl == Impl::fused ? fused_dot_path({p.batch, p.src_len, p.enc_dim, p.dec_dim, p.attn_dim}) : DotPath::keys;
}

}  // namespace

StageCost dot_score_cost(const Problem& p, bool scaled) {
  const CostSizes s(p);
  const double rows = streamed_element_bytes(p);
  const DotPath path = step_path(p);
  if (path == DotPath::annotations)
    return linear_cost(s.B, s.D, s.E) + StageCost{2 * s.B * s.L * s.E, rows * s.B * s.L * s.E + 4 * s.B * s.L};
  if (path == DotPath::state_keys) return state_keys_score_cost(p);
  const double scale = scaled && p.impl == Impl::onednn ? s.B * s.L : 0;  // fused: in q
  return linear_cost(s.B, s.D, s.A) + StageCost{2 * s.B * s.L * s.A + scale, rows * s.B * s.L * s.A + 4 * s.B * s.L};
}

StageCost dot_keys_cost(const Problem& p) {
  switch (step_path(p)) {
    case DotPath::annotations: return StageCost{};
    case DotPath::state_keys: return state_keys_cost(p);
    case DotPath::keys: break;
  }
  return projected_keys_cost(p);
}

StageCost dot_step_cost(const Problem& p, StageCost score, StageCost attend) {
  if (step_path(p) != DotPath::annotations) return score + attend;
  const CostSizes s(p);
  return score + attend + StageCost{0, -streamed_element_bytes(p) * s.B * s.L * s.E};
}

ScorerInfo scorer_info_dot() {
  return {"dot", "e_tj = (W s_{t-1}) . (U h_j)", "W: Linear(dec_dim, attn_dim), U: Linear(enc_dim, attn_dim); no bias",
          "Luong, Pham, Manning 2015, arXiv:1508.04025 (dot, on projections)", make_unscaled,
          {{"W", "Linear", "dec_dim", "attn_dim", false}, {"U", "Linear", "enc_dim", "attn_dim", false}},
          dot_keys_cost, [](const Problem& p) { return dot_score_cost(p, false); }, dot_step_cost};
}

}  // namespace attnbench
