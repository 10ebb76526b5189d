// The tasks' generators and gold alignments on hand-checked cases, and the padded batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "train/cross_entropy.hpp"
#include "train/tasks.hpp"

namespace attnbench {
namespace {

using Tokens = std::vector<std::int64_t>;

TEST(Tasks, ListedInDefOrder) {
  std::vector<std::string> names;
  for (const TaskInfo& t : all_tasks()) names.emplace_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"copy", "reverse", "sort", "recall"}));
  EXPECT_EQ(find_task("recall").min_src_len, 5);
  EXPECT_EQ(max_target_len(find_task("recall"), 20), 1);
  EXPECT_EQ(max_target_len(find_task("sort"), 20), 20);
}

TEST(Tasks, UnknownTaskNamesTheKnownOnes) {
  try {
    find_task("rot13");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown task 'rot13'; known: copy, reverse, sort, recall");
  }
}

TEST(Tasks, CopyByHand) {
  const Example e = find_task("copy").solve({5, 0, 19});
  EXPECT_EQ(e.target, (Tokens{5, 0, 19}));
  EXPECT_EQ(e.gold, (Tokens{0, 1, 2}));
}

TEST(Tasks, ReverseByHand) {
  const Example e = find_task("reverse").solve({5, 0, 19, 7});
  EXPECT_EQ(e.target, (Tokens{7, 19, 0, 5}));
  EXPECT_EQ(e.gold, (Tokens{3, 2, 1, 0}));
}

TEST(Tasks, SortIsStableByHand) {
  // source positions: 0:3 1:1 2:3 3:0 4:1 -> sorted 0(3) 1(1) 1(4) 3(0) 3(2)
  const Example e = find_task("sort").solve({3, 1, 3, 0, 1});
  EXPECT_EQ(e.target, (Tokens{0, 1, 1, 3, 3}));
  EXPECT_EQ(e.gold, (Tokens{3, 1, 4, 0, 2}));
}

TEST(Tasks, RecallByHand) {
  const Example e = find_task("recall").solve({4, 12, 7, 15, 2, 10, 7});
  EXPECT_EQ(e.target, (Tokens{15}));
  EXPECT_EQ(e.gold, (Tokens{3}));
  EXPECT_THROW(find_task("recall").solve({4, 12, 7, 15, 9}), std::invalid_argument);
}

TEST(Tasks, RngIsSplitMix64) {
  // splitmix64 from state 0: the published first outputs.
  TaskRng r(0);
  EXPECT_EQ(r.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(r.next(), 0x6e789e6aa1b965f4ULL);
  TaskRng s(3);
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t x = s.between(5, 8);
    ASSERT_GE(x, 5);
    ASSERT_LE(x, 8);
  }
}

TEST(Tasks, DrawsAreDeterministicAndWithinTheLengths) {
  for (const TaskInfo& task : all_tasks()) {
    const std::vector<Example> a = draw_examples(task, 200, 5, 9, 42);
    const std::vector<Example> b = draw_examples(task, 200, 5, 9, 42);
    const std::vector<Example> c = draw_examples(task, 200, 5, 9, 43);
    std::set<std::size_t> lengths;
    bool differs = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].source, b[i].source) << task.name;
      differs |= a[i].source != c[i].source;
      lengths.insert(a[i].source.size());
      EXPECT_EQ(a[i].target.size(), a[i].gold.size());
      for (std::size_t k = 0; k < a[i].target.size(); ++k)  // the gold position holds the output symbol
        EXPECT_EQ(a[i].source[static_cast<std::size_t>(a[i].gold[k])], a[i].target[k]) << task.name;
      for (std::int64_t x : a[i].source) EXPECT_TRUE(x >= 0 && x < kSymbols) << task.name;
    }
    EXPECT_TRUE(differs) << task.name;
    if (std::string_view(task.name) == "recall")
      EXPECT_EQ(lengths, (std::set<std::size_t>{5, 7, 9}));  // 2n + 1 for n = (length - 1) / 2
    else
      EXPECT_EQ(lengths, (std::set<std::size_t>{5, 6, 7, 8, 9})) << task.name;
  }
}

TEST(Tasks, RecallKeysAreDistinctAndValuesHigh) {
  for (const Example& e : draw_examples(find_task("recall"), 300, 5, 30, 7)) {
    const std::size_t n = (e.source.size() - 1) / 2;
    ASSERT_GE(n, 2u);
    ASSERT_LE(n, 10u);
    std::set<std::int64_t> keys;
    for (std::size_t i = 0; i < n; ++i) {
      keys.insert(e.source[2 * i]);
      EXPECT_LT(e.source[2 * i], kRecallKeys);
      EXPECT_GE(e.source[2 * i + 1], kRecallKeys);
    }
    EXPECT_EQ(keys.size(), n);
    EXPECT_TRUE(keys.contains(e.source.back()));
  }
}

TEST(Tasks, BatchPadsAndShiftsByHand) {
  const std::vector<Example> ex = {find_task("reverse").solve({1, 2, 3}), find_task("reverse").solve({4, 5})};
  const Batch b = make_batch(ex, 0, 3, 4, 4);  // 3 rows, L 4, T 4 (longest target 3 + EOS)
  const std::int64_t P = kPad, S = kBos, E = kEos, I = kIgnoreTarget;
  EXPECT_EQ(b.examples, 2);
  EXPECT_EQ(b.src_tokens, (Tokens{1, 2, 3, P, 4, 5, P, P, 1, 2, 3, P}));
  EXPECT_EQ(b.lengths, (Tokens{3, 2, 3}));
  EXPECT_EQ(b.dec_input, (Tokens{S, 3, 2, 1, S, 5, 4, P, S, 3, 2, 1}));
  EXPECT_EQ(b.targets, (Tokens{3, 2, 1, E, 5, 4, E, I, I, I, I, I}));
  EXPECT_EQ(b.gold_pos, (Tokens{2, 1, 0, -1, 1, 0, -1, -1, -1, -1, -1, -1}));
  const Batch second = make_batch(ex, 1, 3, 4, 4);
  EXPECT_EQ(second.examples, 1);
  EXPECT_THROW(make_batch(ex, 0, 2, 2, 4), std::invalid_argument);  // source longer than L
}

}  // namespace
}  // namespace attnbench
