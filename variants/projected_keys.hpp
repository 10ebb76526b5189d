// Building blocks shared by the scorers: reference projections of s and H.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "core/reference.hpp"
#include "core/scorer.hpp"

namespace attnbench {

// W s for every example: (B, D) -> (B, out) in double.
inline std::vector<double> project_state(const LinearParams& W, std::span<const double> s, const ScorerShape& shape) {
  return ref::linear(s, shape.batch, W);
}

// U h_j for every example and position: (B, L, E) -> (B, L, out) in double.
inline std::vector<double> project_annotations(const LinearParams& U, std::span<const double> H,
                                               const ScorerShape& shape) {
  return ref::linear(H, shape.batch * shape.src_len, U);
}

// Cost of keys K = U h_j, U: Linear(enc_dim, attn_dim), over every example and position.
inline StageCost projected_keys_cost(const Problem& p) {
  const CostSizes s(p);
  return linear_cost(s.B * s.L, s.E, s.A);
}

// Keys in the decoder state's space, K = M h_j with M: Linear(enc_dim, dec_dim) (general's
// W; the fused dot's scale W^T U), over every example and position.
inline StageCost state_keys_cost(const Problem& p) {
  const CostSizes s(p);
  return linear_cost(s.B * s.L, s.E, s.D);
}

// The fused query of scores against such keys: s itself, remembered by every part's
// fused_query() (relaxed: all store the same s, and each part's examples read after their own
// part's store), so that a part's query covers its examples (Scorer::fused_query_covers_part).
class StateQuery {
 public:
  void remember(const float* s) { state_.store(s, std::memory_order_relaxed); }
  // Row b of the last remembered s (B, D).
  const float* row(std::int64_t b, std::int64_t dec_dim) const { return state_.load(std::memory_order_relaxed) + b * dec_dim; }

 private:
  std::atomic<const float*> state_ = nullptr;
};

// One step's scores against such keys: s . k_j per position, no projection of s.
inline StageCost state_keys_score_cost(const Problem& p) {
  const CostSizes s(p);
  return {2 * s.B * s.L * s.D, streamed_element_bytes(p) * s.B * s.L * s.D + 4 * (s.B * s.D + s.B * s.L)};
}

}  // namespace attnbench
