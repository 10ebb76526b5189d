// Analytic work of one call of a stage: floating-point operations and the bytes of the
// tensors it must read and write at least once, f32 except the fused step's bf16 rows
// (README: "Cost model"). The pieces every cost formula is built from; scorers give
// theirs in ScorerInfo.
#pragma once

#include "core/problem.hpp"

namespace attnbench {

struct StageCost {
  double flops = 0;  // a multiply-add counts 2; add, tanh, exp, compare count 1
  double bytes = 0;  // compulsory traffic: every operand read once, every result written once
};

inline StageCost operator+(StageCost a, StageCost b) { return {a.flops + b.flops, a.bytes + b.bytes}; }
inline StageCost operator*(double k, StageCost a) { return {k * a.flops, k * a.bytes}; }

// Bytes per element of the per-sequence rows a step streams (keys, H): the fused step keeps
// them as bf16 under --dtype bf16 (converted once per sequence); everything else is f32
// (oneDNN's bf16 converts per call, so its compulsory f32 traffic is unchanged).
inline double streamed_element_bytes(const Problem& p) {
  return p.impl == Impl::fused && p.dtype == DType::bf16 ? 2 : 4;
}

// dst (rows, out) = src (rows, in) x W^T (+ bias): weights, input and output once.
inline StageCost linear_cost(double rows, double in, double out) {
  return {2 * rows * in * out, 4 * (in * out + rows * in + rows * out)};
}

// The sizes of p as doubles, for cost formulas: B, L, E, D, A, V, M (emb_dim), T (tgt_len),
// h (encoder GRU hidden).
struct CostSizes {
  double B, L, E, D, A, V, M, T, h;
  explicit CostSizes(const Problem& p)
      : B(static_cast<double>(p.batch)),
        L(static_cast<double>(p.src_len)),
        E(static_cast<double>(p.enc_dim)),
        D(static_cast<double>(p.dec_dim)),
        A(static_cast<double>(p.attn_dim)),
        V(static_cast<double>(p.vocab)),
        M(static_cast<double>(p.emb_dim)),
        T(static_cast<double>(p.tgt_len)),
        h(static_cast<double>(p.enc_hidden())) {}
};

}  // namespace attnbench
