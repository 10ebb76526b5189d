#include "train/tasks.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "train/cross_entropy.hpp"

namespace attnbench {

std::uint64_t TaskRng::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::int64_t TaskRng::below(std::int64_t n) {
  const auto range = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;  // reject the biased tail
  for (;;) {
    const std::uint64_t x = next();
    if (x < limit) return static_cast<std::int64_t>(x % range);
  }
}

namespace {

std::vector<std::int64_t> symbols(TaskRng& rng, std::int64_t length) {
  std::vector<std::int64_t> s(static_cast<std::size_t>(length));
  for (std::int64_t& x : s) x = rng.below(kSymbols);
  return s;
}

std::vector<std::int64_t> draw_copy(TaskRng& rng, std::int64_t length) { return symbols(rng, length); }
std::vector<std::int64_t> draw_reverse(TaskRng& rng, std::int64_t length) { return symbols(rng, length); }
std::vector<std::int64_t> draw_sort(TaskRng& rng, std::int64_t length) { return symbols(rng, length); }

// n = (length - 1) / 2 pairs, at least 2 and at most kRecallKeys; the source is 2n + 1 long.
std::vector<std::int64_t> draw_recall(TaskRng& rng, std::int64_t length) {
  const std::int64_t n = std::clamp<std::int64_t>((length - 1) / 2, 2, kRecallKeys);
  std::vector<std::int64_t> keys(static_cast<std::size_t>(kRecallKeys));
  std::iota(keys.begin(), keys.end(), 0);
  for (std::int64_t i = 0; i < n; ++i)  // partial Fisher-Yates: the first n keys, distinct
    std::swap(keys[static_cast<std::size_t>(i)], keys[static_cast<std::size_t>(rng.between(i, kRecallKeys - 1))]);
  std::vector<std::int64_t> source;
  for (std::int64_t i = 0; i < n; ++i) {
    source.push_back(keys[static_cast<std::size_t>(i)]);
    source.push_back(kRecallKeys + rng.below(kSymbols - kRecallKeys));
  }
  source.push_back(keys[static_cast<std::size_t>(rng.below(n))]);
  return source;
}

Example solve_copy(std::vector<std::int64_t> source) {
  Example e{std::move(source), {}, {}};
  e.target = e.source;
  e.gold.resize(e.source.size());
  std::iota(e.gold.begin(), e.gold.end(), 0);
  return e;
}

Example solve_reverse(std::vector<std::int64_t> source) {
  Example e{std::move(source), {}, {}};
  e.target.assign(e.source.rbegin(), e.source.rend());
  for (auto i = static_cast<std::int64_t>(e.source.size()) - 1; i >= 0; --i) e.gold.push_back(i);
  return e;
}

Example solve_sort(std::vector<std::int64_t> source) {
  Example e{std::move(source), {}, {}};
  e.gold.resize(e.source.size());
  std::iota(e.gold.begin(), e.gold.end(), 0);
  std::stable_sort(e.gold.begin(), e.gold.end(), [&](std::int64_t a, std::int64_t b) {
    return e.source[static_cast<std::size_t>(a)] < e.source[static_cast<std::size_t>(b)];
  });
  for (std::int64_t j : e.gold) e.target.push_back(e.source[static_cast<std::size_t>(j)]);
  return e;
}

Example solve_recall(std::vector<std::int64_t> source) {
  Example e{std::move(source), {}, {}};
  const std::int64_t query = e.source.back();
  for (std::size_t j = 0; j + 2 < e.source.size(); j += 2)
    if (e.source[j] == query) {
      e.target = {e.source[j + 1]};
      e.gold = {static_cast<std::int64_t>(j + 1)};
      return e;
    }
  throw std::invalid_argument("recall: the query is not one of the keys");
}

}  // namespace

const std::vector<TaskInfo>& all_tasks() {
  static const std::vector<TaskInfo> tasks = {
#define ATTNBENCH_TASK(name, min_src_len, target_len, description) \
  {#name, description, &draw_##name, &solve_##name, min_src_len, target_len},
#include "train/tasks.def"
#undef ATTNBENCH_TASK
  };
  return tasks;
}

const TaskInfo& find_task(std::string_view name) {
  std::string known;
  for (const TaskInfo& task : all_tasks()) {
    if (task.name == name) return task;
    known += (known.empty() ? "" : ", ") + std::string(task.name);
  }
  throw std::invalid_argument("unknown task '" + std::string(name) + "'; known: " + known);
}

std::int64_t max_target_len(const TaskInfo& task, std::int64_t max_len) {
  return task.target_len == 0 ? max_len : task.target_len;
}

std::vector<Example> draw_examples(const TaskInfo& task, std::int64_t count, std::int64_t len_min,
                                   std::int64_t len_max, std::uint64_t seed) {
  TaskRng rng(seed);
  std::vector<Example> examples;
  examples.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t length = rng.between(len_min, len_max);
    examples.push_back(task.solve(task.draw(rng, length)));
  }
  return examples;
}

Batch make_batch(const std::vector<Example>& examples, std::size_t first, std::int64_t batch, std::int64_t src_len,
                 std::int64_t tgt_len) {
  Batch out;
  out.batch = batch;
  out.src_len = src_len;
  out.tgt_len = tgt_len;
  const auto B = static_cast<std::size_t>(batch), L = static_cast<std::size_t>(src_len),
             T = static_cast<std::size_t>(tgt_len);
  out.src_tokens.assign(B * L, kPad);
  out.lengths.assign(B, 0);
  out.dec_input.assign(B * T, kPad);
  out.targets.assign(B * T, kIgnoreTarget);
  out.gold_pos.assign(B * T, -1);
  out.examples = static_cast<std::int64_t>(std::min(B, examples.size() - first));
  for (std::size_t b = 0; b < B; ++b) {
    const bool real = b < static_cast<std::size_t>(out.examples);
    const Example& e = examples[real ? first + b : first];
    if (e.source.size() > L || e.target.size() + 1 > T) throw std::invalid_argument("make_batch: example too long");
    std::copy(e.source.begin(), e.source.end(), out.src_tokens.begin() + static_cast<std::ptrdiff_t>(b * L));
    out.lengths[b] = static_cast<std::int64_t>(e.source.size());
    out.dec_input[b * T] = kBos;
    for (std::size_t i = 0; i < e.target.size(); ++i) {
      out.dec_input[b * T + i + 1] = e.target[i];
      if (real) {
        out.targets[b * T + i] = e.target[i];
        out.gold_pos[b * T + i] = e.gold[i];
      }
    }
    if (real) out.targets[b * T + e.target.size()] = kEos;
  }
  return out;
}

}  // namespace attnbench
