// Bahdanau's additive scorer e_tj = v . act(W s + U h_j), with act = tanh or identity.
#pragma once

#include <cstdint>
#include <memory>

#include "core/fused_prefetch.hpp"
#include "core/matmul_op.hpp"
#include "core/scorer.hpp"

namespace attnbench {

// Parameters in creation order: W: Linear(D, A), U: Linear(E, A), v: Linear(A, 1), no bias.
std::unique_ptr<Scorer> make_additive(ParamSource& source, const ScorerShape& shape, bool use_tanh);

// Cost of keys at p: K = U h_j; the fused additive_linear's key scores (U^T v) . h_j.
StageCost additive_keys_cost(const Problem& p, bool use_tanh);

// Cost of one `score` step at p: q = W s, then act(k_j + q) and v . over (B, L, A); the
// fused additive_linear: (W^T v) . s per example plus one add per position.
StageCost additive_score_cost(const Problem& p, bool use_tanh);

// additive_linear's step from its parts (ScorerInfo::step_cost): fused, its weights and
// context are computed once per sequence (FusedAttend::prepare), so the step is the score
// and the copies of alpha (B, L) and c (B, E); oneDNN's is score + attend.
StageCost linear_additive_step_cost(const Problem& p, StageCost score, StageCost attend);

// Writes e_b[j] = v . tanh(keys[b, j, :] + query[b, :]) for j < len, additive's and mlp's
// fused score row, from keys_bf16 when it is not null, else from keys (both (B, L, A));
// query is (B, A), v (A). While it scores, the keys of the examples after b are prefetched
// when the keys stream from DRAM (streams_keys of the keys as stored), and so is
// next_pass (fused::tanh_dot_rows).
void fused_tanh_score_row(const float* keys, const std::uint16_t* keys_bf16, const float* query, const float* v,
                          const ScorerShape& shape, std::int64_t b, std::int64_t len, float* e_b,
                          fused::PrefetchAlong next_pass);

// The hidden tensor of a training step: hidden[b, j, :] = tanh(keys[b, j, :] + query[b, :])
// for keys (B, L, A) and query (B, A), by the fused kernels' tanh (1.5e-7 of std::tanh)
// instead of oneDNN's eltwise, which costs twice as much here. Allocates nothing; runs on
// every thread above 128K elements.
void additive_hidden_forward(const float* keys, const float* query, std::int64_t B, std::int64_t L, std::int64_t A,
                             float* hidden);

// The backward of e_j = v . act(z_j), z_j = k_j + q, through act, given h = act(z)
// (B, L, A) and de (B, L): dz = de_j v * act'(z) (tanh' = 1 - h^2), dkeys += dz (B, L, A),
// dquery = sum_j dz (B, A, overwritten). dv is not computed. Allocates nothing; runs on
// every thread above 128K elements of h.
void additive_hidden_backward(const float* hidden, const float* de, const float* v, std::int64_t B, std::int64_t L,
                              std::int64_t A, bool use_tanh, float* dkeys, float* dquery);

}  // namespace attnbench
