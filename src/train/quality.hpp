// What a trained model gets right, from a teacher-forced forward over padded batches.
#pragma once

#include <cstdint>
#include <span>

#include "train/tasks.hpp"

namespace attnbench {

// Means over an evaluation set (results/README.md, train_final.csv):
// - loss: cross-entropy per target token (EOS included);
// - token_acc: share of target tokens (EOS included) whose argmax logit is the target;
// - seq_acc: share of examples whose every token through EOS is right. The decoder is causal,
//   so this is greedy decoding's exact match: greedy output equals the target exactly when,
//   fed the target's prefix, the argmax at every step is the next target token;
// - align_acc: share of target positions (EOS excluded) whose argmax weight is the gold
//   source position; gold_mass: the mean weight on it;
// - entropy_norm: mean H(alpha_t)/ln(len) over the decoder steps with a target (EOS
//   included), for sources of 2 or more positions;
// - drift: mean total variation 0.5 sum_j |alpha_t - alpha_{t-1}| over consecutive steps with a target.
struct Quality {
  double loss = 0, token_acc = 0, seq_acc = 0, align_acc = 0, gold_mass = 0, entropy_norm = 0, drift = 0;
};

// Running sums of Quality over batches. Example:
//   QualitySums q; for (batch...) { forward; q.add(batch, logits, alphas); }  Quality m = q.means();
class QualitySums {
 public:
  // logits (T, B, V) and alphas (T, B, L) of a teacher-forced forward over `batch`; rows past
  // batch.examples are not counted.
  void add(const Batch& batch, std::span<const float> logits, std::span<const float> alphas, std::int64_t vocab);
  Quality means() const;

 private:
  double loss_ = 0, gold_mass_ = 0, entropy_norm_ = 0, drift_ = 0;
  std::int64_t tokens_ = 0, right_tokens_ = 0, examples_ = 0, right_examples_ = 0, aligned_positions_ = 0,
               aligned_ = 0, entropy_steps_ = 0, drift_steps_ = 0;
};

}  // namespace attnbench
