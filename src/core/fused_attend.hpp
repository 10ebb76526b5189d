// The attention step of Impl::fused: per example, the scorer's fused scores, masked
// softmax and context in one pass, with no (B, L, A) intermediate.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/scorer.hpp"

namespace attnbench {

// Below this much work per step (multiply-add equivalents, fused_step_work) one thread
// does all examples: OpenMP's fork/join (~2-3 us) would cost more than it saves. Measured on
// a 2-core AMD EPYC VM (Zen 4, family 25 model 17, 2026-12-03), 2 threads, each step forced
// serial and parallel, 3 alternations at B 6-32 L20 E=D=A=64 and B 2-12 L10 E=D=A=256: the
// parallel step starts to win between ~26K and ~64K for every scorer, by too little to
// stand out of the noise below ~96K. Against the former 256K, alternately four times, the
// steps whose decision changed (102,400-204,800: additive, mlp B16, B32 L20 E=D=A=64 and
// B8, B16 L10 E=D=A=256; dot, scaled_dot, general B64 L20 E=D=A=64) took 0.52x-0.86x as
// long (paired medians), the others 0.80x-1.16x.
inline constexpr double kParallelStepWork = 96 * 1024;

// True when the step's annotations, stored in `dtype` (B L E x 4 bytes, or x 2 in bf16),
// stream from DRAM (fused::streams_from_dram), so that the context pass reads them four rows
// at a time (fused::weighted_sum_rows_streamed; in bf16 prefetching the rows it sums next),
// not in blocks summed in registers over all rows (fused::weighted_sum_rows).
bool streams_annotations(const ScorerShape& shape, DType dtype);

// True when a tanh scorer's keys (additive, mlp: B L A as stored in `dtype`) stream from DRAM
// (fused::streams_from_dram), so that its score pass prefetches them on past each example's
// end into the next example's (fused::tanh_dot_rows' `readable`).
bool streams_keys(const ScorerShape& shape, DType dtype);

// From this many bytes of stored annotations the score pass of a scorer bound by its tanh
// prefetches each example's rows for its context (Scorer::fused_score_row's next_pass): they
// no longer stay in a core's L2 between steps, and the tanh's compute hides their reading.
// Measured on 2 cores of an Intel Xeon (AMX, L2 2 MiB, L3 28.5 GB/s on 1 thread), 2026-12-04,
// at the mid size (B32 L50 E512: 3.3 MB in f32), additive and mlp, with the prefetch over
// without, alternately four times: 0.86 to 0.89 on 1 and 2 threads. On AMD EPYCs (Zen 4 and
// 5, whose L3 reads 2.2x and 3.0x as fast) the same forcing at the mid size gained nothing
// beyond the noise (0.88 to 1.10, 0.99 to 1.07; scratch runs of 2026-12-02 and 12-03).
inline constexpr double kContextPrefetchBytes = 2.0 * 1024 * 1024;

// True when the step's annotations as stored take kContextPrefetchBytes or more.
bool prefetches_context_rows(const ScorerShape& shape, DType dtype);

// True when the passes of a fused step alternate the order of their examples (FusedAttend):
// when neither the annotations nor a tanh scorer's keys stream from DRAM (streams_annotations,
// streams_keys), the only passes that prefetch the rows of the examples after their own.
// Each step of a sequence reads the same rows, and a pass that starts with those the pass
// before read last finds them still in the core's L2. Measured on 2 cores
// of an Intel Xeon without AMX (family 6 model 207, L2 2 MiB a core), 2026-12-06, at the mid
// size (B32 L50 E512 D256 A256: 3.3 MB of f32 annotations), the step alternating over the
// step in one order, paired medians of 4 alternations, 1 / 2 threads (each thread's part):
// f32 dot 0.78 / 0.60, scaled_dot 0.78 / 0.63, general 0.78 / 0.61, location 0.62 / 0.80,
// additive 0.93 / 0.72, mlp 0.91 / 0.84; bf16 dot, scaled_dot and general 0.80 / 0.90 to 0.98,
// location 0.89 / 1.04, additive and mlp 0.91 / 0.99 to 1.01 (on 2 threads its rows already
// fit the two L2s). At the paper's sizes, which stream and so keep one order, alternating had
// given 0.90 to 1.07. On the Zen 5 of 2026-12-06 (L2 1 MiB a core), 6 alternations: f32 0.86 to
// 0.94 / 0.88 to 0.96, bf16 0.85 to 0.96 / 0.97 to 1.01.
bool alternates_example_order(const ScorerShape& shape, DType dtype);

// Splits the examples into `parts` contiguous ranges with about equal sums of lengths and
// returns the first example of range `part` (0 for part 0, the batch for part == parts);
// length_prefix (batch + 1) holds the running sums of the lengths from 0. Contiguous, so
// threads share a cache line of e, alpha or c only at a range's edge; each edge is the
// prefix nearest to its ideal share. Example: lengths {10, 7, 4}, 2 parts: 1 ({10} | {7, 4}).
std::int64_t first_example_of_part(std::span<const std::int64_t> length_prefix, int part, int parts);
// The running sums of `lengths` from 0 (lengths.size() + 1 of them), as first_example_of_part takes them.
std::vector<std::int64_t> length_prefix_of(std::span<const std::int64_t> lengths);

// The work of one fused step: the scorer's score pass (Scorer::fused_score_work) plus the
// context's B L E multiply-adds.
double fused_step_work(const ScorerShape& shape, double score_work);

// The OpenMP threads a fused step runs on: `threads` when the batch has more than one
// example and fused_step_work(shape, score_work) >= kParallelStepWork, else 1. FusedAttend
// spreads the examples over them, and a scorer builds its FusedProjection for them.
int fused_step_threads(int threads, const ScorerShape& shape, double score_work);

// For scores e (B, L), annotations H (B, L, E) and lengths[b] valid positions per
// example: positions j >= lengths[b] get score -inf and weight exactly 0.f, alpha is
// the softmax over the rest, c = alpha H (B, E). The scorer must be built for
// Impl::fused and prepared. Nothing allocates after construction. Where
// alternates_example_order(), each pass (score, attend, step) visits its examples (each
// thread's part) in the order opposite to the pass before: each example's results are the
// same in either order, bit for bit.
// Example: FusedAttend fa(ctx.threads(), shape, lengths); fa.step(scorer, s, H, e, alpha, c);
class FusedAttend {
 public:
  FusedAttend() = default;
  // With dtype bf16 the context reads H as bf16 (converted once per sequence in prepare()).
  // The examples are spread over `threads` when fused_step_work(shape, score_work) >=
  // kParallelStepWork; score_work is the scorer's fused_score_work(shape).
  FusedAttend(int threads, const ScorerShape& shape, std::vector<std::int64_t> lengths, DType dtype,
              double score_work);

  // Once per sequence, after scorer.prepare(H): with bf16, takes the scorer's bf16 copy of
  // H or converts H into its own; when the scorer has static alignment logits, its weights
  // and context do not depend on the step, so they are computed here and step() only copies
  // them. H must be the annotations step() and attend() are given (with bf16 they read the copy).
  void prepare(const Scorer& scorer, const float* H);

  // Writes e (B, L) for the state s (B, D).
  void score(Scorer& scorer, const float* s, float* e);
  // Writes alpha (B, L) from `logits` (B, L) (padded positions are not read) and c (B, E).
  void attend(const float* logits, const float* H, float* alpha, float* c);
  // score() then attend() one example at a time, in one loop over the examples; the
  // softmax is over scorer.alignment_logits() when the scorer has them, else over e.
  // After prepare() for a scorer with static logits, alpha and c are prepare()'s, copied.
  void step(Scorer& scorer, const float* s, const float* H, float* e, float* alpha, float* c);

  // True when the next pass (score, attend, step; prepare() makes one attend() pass for a
  // scorer with static logits) visits each part's examples from the last to the first.
  bool next_pass_backwards() const { return backwards_; }

  // True when the examples are spread over `threads` OpenMP threads.
  bool parallel() const { return parallel_; }
  // The same for a step that copies prepare()'s static weights and context: its work is the
  // score rows and B (L + E) copies, so it goes parallel only at far larger sizes.
  bool parallel_when_static() const { return parallel_static_; }
  // True when the `parts` threads of a parallel step, each having computed its part of the
  // scorer's query, wait for every part (a barrier) before their examples: unless the team
  // has all `threads` threads, the parts of the examples (first_example_of_part) are the
  // even_part's of the batch and the scorer's query covers such a part
  // (Scorer::fused_query_covers_part). On 2 cores of an AMD EPYC (Zen 5, whose two cores
  // pass a cache line to and fro in about 0.5 us) the barrier took 1.5 us of a 44 us step
  // at the mid size (B32 L50 E512 D256 A256, dot, rdtsc around it).
  bool waits_for_whole_query(const Scorer& scorer, int parts) const;

 private:
  // What a pass without a query gives for_each_example.
  struct NoQuery {};
  // The scorer's fused query of s as for_each_example calls it.
  struct ScorerQuery {
    Scorer& scorer;
    const float* s;
    void operator()(int part, int parts) const { scorer.fused_query(s, part, parts); }
  };
  // per_example(b) for every example, on threads_ threads when `parallel` (each its part of
  // the examples, first_example_of_part), else on the calling thread. With a ScorerQuery,
  // each thread first calls it for its part (one part for the calling thread) and, when
  // waits_for_whole_query(), waits for the others: the query and the examples in one
  // parallel region.
  // Where alternate_order_, the examples of each part go from last to first on every other
  // call (backwards_), which it then flips.
  template <class Query, class PerExample>
  void for_each_example(bool parallel, Query query, PerExample per_example);
  // per_example(b) for b in [first, end): from end - 1 down when backwards_, else up.
  template <class PerExample>
  void in_order(std::int64_t first, std::int64_t end, PerExample& per_example) const;
  void score_example(const Scorer& scorer, std::int64_t b, float* e, fused::PrefetchAlong next_pass) const;
  // The annotation rows attend_example() reads for example b (H's, or the bf16 copy's).
  fused::PrefetchAlong context_rows(std::int64_t b, const float* H) const;
  void attend_example(std::int64_t b, const float* logits, const float* H, float* alpha, float* c) const;

  int threads_ = 1;
  std::int64_t batch_ = 0, src_len_ = 0, enc_dim_ = 0;
  std::vector<std::int64_t> lengths_;
  std::vector<std::int64_t> length_prefix_;  // (B + 1): length_prefix_[b] = lengths_[0] + ... + lengths_[b - 1]
  bool even_parts_ = false;  // threads_ parts of the examples by length are even_part's
  bool parallel_ = false, parallel_static_ = false;
  bool static_ready_ = false;                          // prepare() saw static alignment logits
  std::vector<float> static_alpha_, static_context_;  // (B, L) and (B, E), allocated up front
  bool bf16_ = false;
  bool streams_annotations_ = false;  // streams_annotations(): annotations prefetched
  bool prefetch_context_rows_ = false;  // prefetches_context_rows()
  bool alternate_order_ = false;        // alternates_example_order()
  bool backwards_ = false;              // the next pass goes from each part's last example
  const std::uint16_t* annotations_bf16_ = nullptr;  // bf16 H of the last prepare(), when bf16_
  std::vector<std::uint16_t> own_annotations_bf16_;  // the copy when the scorer has none
};

}  // namespace attnbench
