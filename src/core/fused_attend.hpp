// The attention step of Impl::fused: per example, the scorer's fused scores, masked
// softmax and context in one pass, with no (B, L, A) intermediate.
#pragma once

#include <cstdint>
#include <vector>

#include "core/scorer.hpp"

namespace attnbench {

// Below this many multiply-adds per step (see fused_step_macs) one thread does all
// examples: OpenMP's fork/join (~2 us) would cost more than it saves. Measured on the
// 2-core AMD EPYC dev machine: 2 threads pay from ~40K for additive (tanh-bound) but
// only from ~250K for the memory-bound dot, general and additive_linear; 128K splits
// the difference (the lesson's 960 stays serial, B32/L50/E512/A256's 1.2M runs 1.8x
// faster on 2).
inline constexpr std::int64_t kParallelStepMacs = 128 * 1024;

// About the multiply-adds of one fused step: batch * src_len * (key width + enc_dim),
// the key width being attn_dim or, for `general`, dec_dim (the larger is taken).
std::int64_t fused_step_macs(const ScorerShape& shape);

// For scores e (B, L), annotations H (B, L, E) and lengths[b] valid positions per
// example: positions j >= lengths[b] get score -inf and weight exactly 0.f, alpha is
// the softmax over the rest, c = alpha H (B, E). The scorer must be built for
// Impl::fused and prepared. Nothing allocates after construction.
// Example: FusedAttend fa(ctx.threads(), shape, lengths); fa.step(scorer, s, H, e, alpha, c);
class FusedAttend {
 public:
  FusedAttend() = default;
  // With dtype bf16 the context reads H as bf16 (converted once per sequence in prepare()).
  FusedAttend(int threads, const ScorerShape& shape, std::vector<std::int64_t> lengths, DType dtype = DType::f32);

  // Once per sequence, after scorer.prepare(H): with bf16, takes the scorer's bf16 copy of
  // H or converts H into its own; when the scorer has static alignment logits, its weights
  // and context do not depend on the step, so they are computed here and step() only copies
  // them. H must be the annotations step() and attend() are given (with bf16 they read the copy).
  void prepare(const Scorer& scorer, const float* H);

  // Writes e (B, L) for the state s (B, D).
  void score(Scorer& scorer, const float* s, float* e) const;
  // Writes alpha (B, L) from `logits` (B, L) (padded positions are not read) and c (B, E).
  void attend(const float* logits, const float* H, float* alpha, float* c) const;
  // score() then attend() one example at a time, in one loop over the examples; the
  // softmax is over scorer.alignment_logits() when the scorer has them, else over e.
  // After prepare() for a scorer with static logits, alpha and c are prepare()'s, copied.
  void step(Scorer& scorer, const float* s, const float* H, float* e, float* alpha, float* c) const;

  // True when the examples are spread over `threads` OpenMP threads.
  bool parallel() const { return parallel_; }

 private:
  template <class PerExample>
  void for_each_example(PerExample per_example) const;
  void score_example(const Scorer& scorer, std::int64_t b, float* e) const;
  void attend_example(std::int64_t b, const float* logits, const float* H, float* alpha, float* c) const;

  int threads_ = 1;
  std::int64_t batch_ = 0, src_len_ = 0, enc_dim_ = 0;
  std::vector<std::int64_t> lengths_;
  bool parallel_ = false;
  bool static_ready_ = false;                          // prepare() saw static alignment logits
  std::vector<float> static_alpha_, static_context_;  // (B, L) and (B, E), allocated up front
  bool bf16_ = false;
  const std::uint16_t* annotations_bf16_ = nullptr;  // bf16 H of the last prepare(), when bf16_
  std::vector<std::uint16_t> own_annotations_bf16_;  // the copy when the scorer has none
};

}  // namespace attnbench
