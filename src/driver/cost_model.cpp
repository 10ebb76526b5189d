#include "driver/cost_model.hpp"

#include <stdexcept>
#include <string>

#include "variants/dot.hpp"

namespace attnbench {

namespace {

struct Sizes {
  double B, L, E, D, A, V, M, T, h;
};

Sizes sizes_of(const Problem& p) {
  return {static_cast<double>(p.batch),   static_cast<double>(p.src_len), static_cast<double>(p.enc_dim),
          static_cast<double>(p.dec_dim), static_cast<double>(p.attn_dim), static_cast<double>(p.vocab),
          static_cast<double>(p.emb_dim), static_cast<double>(p.tgt_len), static_cast<double>(p.enc_hidden())};
}

StageCost operator+(StageCost a, StageCost b) { return {a.flops + b.flops, a.bytes + b.bytes}; }
StageCost operator*(double k, StageCost a) { return {k * a.flops, k * a.bytes}; }

// dst (rows, out) = src (rows, in) x W^T (+ bias): weights, input and output once.
StageCost linear(double rows, double in, double out) {
  return {2 * rows * in * out, 4 * (in * out + rows * in + rows * out)};
}

bool is_additive(const std::string& scorer) { return scorer == "additive" || scorer == "additive_linear"; }
bool is_dot(const std::string& scorer) { return scorer == "dot" || scorer == "scaled_dot"; }

ScorerShape shape_of(const Problem& p) { return {p.batch, p.src_len, p.enc_dim, p.dec_dim, p.attn_dim}; }

// The fused dot/scaled_dot scores from H with the folded query (variants/dot.hpp).
bool fused_dot_from_annotations(const Problem& p) {
  return p.impl == Impl::fused && is_dot(p.scorer) && dot_scores_from_annotations(shape_of(p));
}

// Bytes per element of the per-sequence rows a step streams (keys, H): the fused step keeps
// them as bf16 under --dtype bf16; everything else is f32.
double row_bytes(const Problem& p) { return p.impl == Impl::fused && p.dtype == DType::bf16 ? 2 : 4; }

// The fused additive_linear folds v into U and W: key scores (U^T v) . h_j, query scores (W^T v) . s.
bool fused_linear_additive(const Problem& p) { return p.impl == Impl::fused && p.scorer == "additive_linear"; }

StageCost keys(const Problem& p, const Sizes& s) {
  if (fused_dot_from_annotations(p)) return {};                          // no keys: scores come from H
  if (fused_linear_additive(p)) return linear(s.B * s.L, s.E, 1);  // (U^T v) . h_j
  return linear(s.B * s.L, s.E, p.scorer == "general" ? s.D : s.A);
}

// Fused dot/scaled_dot from H: q = (scale U^T W) s, then q . h_j (the scale folded in).
StageCost fused_dot_score_from_annotations(const Problem& p, const Sizes& s) {
  return linear(s.B, s.D, s.E) + StageCost{2 * s.B * s.L * s.E, row_bytes(p) * s.B * s.L * s.E + 4 * s.B * s.L};
}

// Fused additive_linear: (W^T v) . s per example, plus the key score per position.
StageCost fused_linear_additive_score(const Sizes& s) {
  return linear(s.B, s.D, 1) + StageCost{s.B * s.L, 4 * (s.B * s.L + s.B * s.L)};
}

StageCost score(const Problem& p, const Sizes& s) {
  if (fused_dot_from_annotations(p)) return fused_dot_score_from_annotations(p, s);
  if (fused_linear_additive(p)) return fused_linear_additive_score(s);
  if (p.scorer == "general") return {2 * s.B * s.L * s.D, row_bytes(p) * s.B * s.L * s.D + 4 * (s.B * s.D + s.B * s.L)};
  const StageCost query = linear(s.B, s.D, s.A);
  if (is_additive(p.scorer)) {
    const double hidden = s.B * s.L * s.A;
    const double elementwise = (p.scorer == "additive" ? 2 : 1) * hidden;  // K + q, and tanh as one flop
    // fused: v . act(k_j + q) per position, reading K once; no (B, L, A) tensor.
    if (p.impl == Impl::fused)
      return query + StageCost{elementwise + 2 * hidden, row_bytes(p) * hidden + 4 * (s.A + s.B * s.L)};
    // onednn: K + q (and tanh) over (B, L, A), written once and read again by v.
    return query + StageCost{elementwise, 4 * 2 * hidden} + linear(s.B * s.L, s.A, 1);
  }
  const double scale = p.scorer == "scaled_dot" && p.impl == Impl::onednn ? s.B * s.L : 0;  // fused: in q
  return query + StageCost{2 * s.B * s.L * s.A + scale, row_bytes(p) * s.B * s.L * s.A + 4 * s.B * s.L};
}

StageCost attend(const Problem& p, const Sizes& s) {
  const StageCost softmax{5 * s.B * s.L, 4 * 2 * s.B * s.L};  // max, subtract, exp, sum, divide
  const StageCost context{2 * s.B * s.L * s.E, row_bytes(p) * s.B * s.L * s.E + 4 * (s.B * s.L + s.B * s.E)};
  return softmax + context;
}

// One attention step. The fused step reads H once: scoring from H shares the context's
// read; additive_linear's weights and context are computed once per sequence and the step
// writes copies of them (alpha and c) next to its scores.
StageCost step(const Problem& p, const Sizes& s) {
  if (fused_dot_from_annotations(p)) return score(p, s) + attend(p, s) + StageCost{0, -row_bytes(p) * s.B * s.L * s.E};
  if (fused_linear_additive(p)) return score(p, s) + StageCost{0, 4 * (s.B * s.L + s.B * s.E)};
  return score(p, s) + attend(p, s);
}

// One GRU step over `rows` examples: both gate matmuls and ~10 elementwise ops per output.
StageCost gru_step(double rows, double in, double hidden) {
  return linear(rows, in, 3 * hidden) + linear(rows, hidden, 3 * hidden) + StageCost{10 * rows * hidden, 0};
}

StageCost cell(const Sizes& s) { return gru_step(s.B, s.M + s.E, s.D); }

StageCost output(const Sizes& s) { return linear(s.B, s.D + s.E, s.V); }

StageCost encoder(const Sizes& s) {
  return 2 * s.L * gru_step(s.B, s.M, s.h) + linear(s.B, s.h, s.D) + StageCost{0, 4 * s.B * s.L * s.M};
}

}  // namespace

bool is_sequence_stage(std::string_view stage) {
  return stage == "keys" || stage == "encoder" || stage == "decode";
}

StageCost stage_cost(const Problem& p, std::string_view stage) {
  const Sizes s = sizes_of(p);
  if (stage == "keys") return keys(p, s);
  if (stage == "score") return score(p, s);
  if (stage == "attend") return attend(p, s);
  if (stage == "step") return step(p, s);
  if (stage == "cell") return cell(s);
  if (stage == "output") return output(s);
  if (stage == "encoder") return encoder(s);
  if (stage == "decode") return keys(p, s) + s.T * (step(p, s) + cell(s) + output(s));
  throw std::invalid_argument("unknown stage '" + std::string(stage) + "'");
}

}  // namespace attnbench
