// One attention step on given H and s: scores, masked softmax, context.
#pragma once

#include <cstdint>
#include <vector>

#include "core/onednn_context.hpp"
#include "core/scorer.hpp"

namespace attnbench {

struct AttentionStep {
  std::vector<float> scores;   // (B, L), masked positions -inf
  std::vector<float> weights;  // (B, L)
  std::vector<float> context;  // (B, E)
};

// Builds `scorer` on ctx for `impl`, prepares keys from H (B, L, E) and scores s (B, D).
AttentionStep run_attention_step(OneDnnContext& ctx, Scorer& scorer, const ScorerShape& shape,
                                 const std::vector<float>& H, const std::vector<float>& s,
                                 const std::vector<std::int64_t>& lengths, Impl impl = Impl::onednn);

}  // namespace attnbench
