// The pluggable part: a scoring function e = score(s, H) and its plain reference.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/fused_prefetch.hpp"
#include "core/onednn_context.hpp"
#include "core/param_source.hpp"
#include "core/problem.hpp"
#include "core/stage_cost.hpp"

namespace attnbench {

// Sizes a scorer sees: H is (batch, src_len, enc_dim), s is (batch, dec_dim).
struct ScorerShape {
  std::int64_t batch = 0, src_len = 0, enc_dim = 0, dec_dim = 0, attn_dim = 0;
};

// One parameter tensor of a scorer: its name relative to the scorer as PyTorch's
// named_parameters() spells it ("W.weight"), its shape in PyTorch's layout and its values.
struct ParamView {
  const char* name;
  std::vector<std::int64_t> shape;
  std::span<float> value;
};

// Gradients of a scorer's parameters, one span per parameters() entry, same order and layout.
using ParamGrads = std::span<const std::span<float>>;

// Maps the previous decoder state s (B, D) and the annotations H (B, L, E) to
// scores e (B, L). A scorer owns only its parameters and its cached keys.
class Scorer {
 public:
  virtual ~Scorer() = default;

  // Creates what `impl` scores with: the keys' oneDNN primitives (both impls), then
  // score()'s primitives (Impl::onednn) or the fused query (Impl::fused). Call once
  // before prepare().
  virtual void build(OneDnnContext& ctx, Impl impl) = 0;
  // Computes the step-independent keys from H; H must stay alive while scores are computed.
  virtual void prepare(const float* H) = 0;
  // Writes e (B, L) for the state s (B, D), using the keys of the last prepare().
  // Needs build(ctx, Impl::onednn).
  virtual void score(const float* s, float* e) = 0;

  // The fused path (needs build(ctx, Impl::fused)); neither call allocates.
  // Computes the step-dependent part of the scores from the state s (B, D), e.g. q = W s,
  // for the examples of part `part` of `parts` (even_part of the batch): each of `parts`
  // threads calls it with its own part, and fused_score_row() may run once all have returned
  // (parts = 1: the whole batch), or, when fused_query_covers_part(parts), for the examples
  // of a part once that part's call has returned. s must stay valid until fused_score_row()
  // is done with it.
  virtual void fused_query(const float* s, int part, int parts) = 0;
  // True when fused_query(s, part, parts) writes everything fused_score_row(b) reads for the
  // examples b of even_part(batch, part, parts) (e.g. its rows of q = W s) and nothing that
  // the other parts' examples read (but through atomics, all storing the same value): a
  // thread that scores only those may start right after its own call, without waiting for
  // the other parts' (FusedAttend then has no barrier between the query and the examples).
  // False unless a scorer says so.
  virtual bool fused_query_covers_part(int /*parts*/) const { return false; }
  // Writes e_b[j], j < len <= L: example b's scores from the keys of the last prepare()
  // and the last fused_query(). Safe to call concurrently for different b. `next_pass` is
  // the memory the caller reads right after (the example's annotations, for its context):
  // a scorer whose row loop is bound by compute prefetches it there (additive and mlp, in
  // fused::tanh_dot_rows), the others ignore it; it changes no result.
  virtual void fused_score_row(std::int64_t b, std::int64_t len, float* e_b, fused::PrefetchAlong next_pass) const = 0;

  // Multiply-add equivalents of one fused score pass's rows (every fused_score_row, the
  // part the step spreads over threads) at `shape`, for choosing the thread count: the
  // default is one per element of the scored rows, B L max(A, D); a scorer with costlier
  // terms (tanh), narrower rows or another algorithm says so.
  virtual double fused_score_work(const ScorerShape& shape) const {
    return static_cast<double>(shape.batch * shape.src_len) * static_cast<double>(std::max(shape.attn_dim, shape.dec_dim));
  }

  // The annotations as bf16 bits (fused::to_bf16 of the last prepare()'s H) when the scorer
  // was built for Impl::fused on a bf16 context and scores from H; nullptr otherwise. The
  // fused step then reads the context from this copy instead of converting H again.
  virtual const std::uint16_t* fused_annotations_bf16() const { return nullptr; }

  // Scores that differ from score()'s (and the fused rows) by a constant per example and do not depend on s,
  // when the scorer has them (softmax is shift-invariant, so they give the same weights,
  // bit-identical at every step); nullptr otherwise. Valid after prepare().
  virtual const float* alignment_logits() const { return nullptr; }
  // The same scores in plain double loops from the same parameters, without oneDNN.
  virtual std::vector<double> reference_score(std::span<const double> s, std::span<const double> H) const = 0;

  // Training (Impl::onednn only). Every parameter in PyTorch's named_parameters() order;
  // the spans stay valid for the scorer's life (an optimizer updates them in place).
  virtual std::vector<ParamView> parameters() = 0;
  // Makes the forward ops read the parameters again after they changed in place; allocates nothing.
  virtual void reload() = 0;
  // Creates the backward primitives; call once after build(ctx, Impl::onednn).
  virtual void build_backward(OneDnnContext& ctx) = 0;
  // Backward of one score(s, e) call made with the keys of the last prepare(): given
  // de = dLoss/de (B, L), adds this step's dLoss/dparameter to `grads`, writes ds = dLoss/ds
  // (B, D) and accumulates dLoss/dkeys inside the scorer. Steps may come in any order.
  virtual void backward_score(const float* s, const float* de, float* ds, ParamGrads grads) = 0;
  // Backward of prepare(H) once every step's backward_score() is done: adds the keys'
  // dLoss/dparameter to `grads`, adds dLoss/dH to dH (B, L, E) and clears the accumulated dkeys.
  virtual void backward_keys(const float* H, float* dH, ParamGrads grads) = 0;
};

// One parameter module of a scorer, as PyTorch creates it: `in` and `out` name a Problem
// size field ("dec_dim") or are a number ("1").
struct ScorerModule {
  const char* name;  // "W"
  const char* kind;  // "Linear"
  const char* in;
  const char* out;
  bool bias;
};

// One row of the scorer table (variants/variants.def lists them).
struct ScorerInfo {
  const char* name;
  const char* formula;
  const char* parameters;  // in PyTorch creation order
  const char* paper;
  // Draws the parameters from `source` in PyTorch's order.
  std::unique_ptr<Scorer> (*make)(ParamSource& source, const ScorerShape& shape);
  std::vector<ScorerModule> modules;  // in PyTorch creation order
  // Cost of stage `keys` (once per sequence) at p.
  StageCost (*keys_cost)(const Problem& p);
  // Cost of stage `score` (one step) at p, computed p.impl's way.
  StageCost (*score_cost)(const Problem& p);
  // Cost of stage `step` at p given its parts' costs `score` (score_cost) and `attend`
  // (softmax and context): score_then_attend, their sum, unless p.impl's step shares work
  // between them (the fused dot scoring from H reads H once for both).
  StageCost (*step_cost)(const Problem& p, StageCost score, StageCost attend);
};

// The step of a scorer whose step is its score then the attend: score + attend.
inline StageCost score_then_attend(const Problem&, StageCost score, StageCost attend) { return score + attend; }

}  // namespace attnbench
