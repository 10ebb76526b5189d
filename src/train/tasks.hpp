// Synthetic seq2seq tasks with gold alignments, drawn deterministically from a seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnbench {

// 20 symbols 0..19, then PAD, BOS, EOS: vocab 23.
inline constexpr std::int64_t kSymbols = 20;
inline constexpr std::int64_t kPad = 20;
inline constexpr std::int64_t kBos = 21;
inline constexpr std::int64_t kEos = 22;
inline constexpr std::int64_t kTaskVocab = 23;
// recall: keys are 0..9 (distinct within an example), values 10..19.
inline constexpr std::int64_t kRecallKeys = 10;

// A deterministic stream of whole numbers (splitmix64): the same seed gives the same draws
// on every platform. Example: TaskRng r(7); std::int64_t x = r.below(10);  // 0 <= x < 10
class TaskRng {
 public:
  explicit TaskRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, n), n >= 1, without modulo bias.
  std::int64_t below(std::int64_t n);
  // Uniform in [lo, hi], lo <= hi.
  std::int64_t between(std::int64_t lo, std::int64_t hi) { return lo + below(hi - lo + 1); }

 private:
  std::uint64_t state_;
};

// One example: source and target symbols (the target without EOS) and, for every target
// position, the source position it should attend to.
struct Example {
  std::vector<std::int64_t> source;
  std::vector<std::int64_t> target;
  std::vector<std::int64_t> gold;  // gold[i] = source position of target[i]
};

struct TaskInfo {
  const char* name;
  const char* description;
  // Draws a source of `length` symbols (recall: 2n + 1 symbols, n = (length - 1) / 2 within 2..10).
  std::vector<std::int64_t> (*draw)(TaskRng& rng, std::int64_t length);
  // The target and gold alignment of a source. Example: sort {3, 1, 3, 0} -> target {0, 1, 3, 3},
  // gold {3, 1, 0, 2}; recall {4, 12, 7, 15, 7} -> target {15}, gold {3}.
  Example (*solve)(std::vector<std::int64_t> source);
  std::int64_t min_src_len;  // the shortest --src-len the task is defined for
  std::int64_t target_len;   // every target's length (EOS excluded); 0: the source's length
};

// Every task, in tasks.def order.
const std::vector<TaskInfo>& all_tasks();
// The task called `name`; throws std::invalid_argument "unknown task 'x'; known: copy, ...".
const TaskInfo& find_task(std::string_view name);

// The longest target (EOS excluded) of `task` for sources up to max_len.
std::int64_t max_target_len(const TaskInfo& task, std::int64_t max_len);

// `count` examples of `task` with source lengths uniform in len_min..len_max, drawn from
// `seed` alone (the same arguments give the same examples). Example:
//   draw_examples(find_task("reverse"), 4, 5, 8, 1) -> 4 examples of lengths 5..8.
std::vector<Example> draw_examples(const TaskInfo& task, std::int64_t count, std::int64_t len_min,
                                   std::int64_t len_max, std::uint64_t seed);

// A padded batch as the harness reads it, with sizes (B, L) and (B, T), T = longest target + 1:
// source padded with PAD; the decoder reads BOS then the target (PAD after it); the targets
// are the target then EOS, kIgnoreTarget after; gold_pos is the gold source position per
// target position (-1 at EOS and after).
struct Batch {
  std::int64_t batch = 0, src_len = 0, tgt_len = 0;
  std::vector<std::int64_t> src_tokens, lengths;  // (B, L), (B)
  std::vector<std::int64_t> dec_input, targets;   // (B, T)
  std::vector<std::int64_t> gold_pos;             // (B, T)
  std::int64_t examples = 0;  // rows that hold an example; rows after them repeat row 0 with targets ignored
};

// Packs examples[first, first + B) (fewer at the end) into a batch of B rows, L and T given.
Batch make_batch(const std::vector<Example>& examples, std::size_t first, std::int64_t batch, std::int64_t src_len,
                 std::int64_t tgt_len);

}  // namespace attnbench
