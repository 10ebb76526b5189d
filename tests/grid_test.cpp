// value_spec parsing and Grid expansion: every value form, every error, product order, union.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "driver/grid.hpp"
#include "driver/value_spec.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

using I = std::vector<std::int64_t>;
using U = std::vector<std::uint64_t>;
using S = std::vector<std::string>;

// Passes when `f` throws std::invalid_argument whose what() contains `part`.
::testing::AssertionResult throws_with(const std::function<void()>& f, const std::string& part) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message '" << e.what() << "' lacks '" << part << "'";
  }
  return ::testing::AssertionFailure() << "no std::invalid_argument thrown";
}

S all_scorers() {
  S names;
  for (const ScorerInfo& info : scorer_table()) names.push_back(info.name);
  return names;
}

// ---- value_spec: forms ----

TEST(ValueSpec, SingleValue) {
  EXPECT_EQ(parse_int_spec("8", ','), I{8});
  EXPECT_EQ(parse_int_spec(" 8 ", ','), I{8});
  EXPECT_EQ(parse_int_spec("-3", ','), I{-3});
}

TEST(ValueSpec, ListUsesTheGivenSeparator) {
  EXPECT_EQ(parse_int_spec("8,32,128", ','), (I{8, 32, 128}));
  EXPECT_EQ(parse_int_spec("8;32; 128", ';'), (I{8, 32, 128}));
  EXPECT_TRUE(throws_with([] { parse_int_spec("8;32", ','); }, "trailing characters ';32'"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("8,32", ';'); }, "trailing characters ',32'"));
}

TEST(ValueSpec, ArithmeticRangeIsInclusive) {
  EXPECT_EQ(parse_int_spec("10:100:10", ','), (I{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(parse_int_spec("1:10:4", ','), (I{1, 5, 9}));  // stops at the last value <= hi
  EXPECT_EQ(parse_int_spec("3:6", ','), (I{3, 4, 5, 6}));
  EXPECT_EQ(parse_int_spec("5:5", ','), I{5});
  EXPECT_EQ(parse_int_spec("-2:2:2", ','), (I{-2, 0, 2}));
}

TEST(ValueSpec, GeometricRange) {
  EXPECT_EQ(parse_int_spec("16:1024:*2", ','), (I{16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(parse_int_spec("1:100:*3", ','), (I{1, 3, 9, 27, 81}));
  EXPECT_EQ(parse_int_spec("8:8:*2", ','), I{8});
  // Near the top of the type: no overflow, stops at the last value <= hi.
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(parse_int_spec("4611686018427387904:" + std::to_string(big) + ":*2", ','), I{4611686018427387904});
}

TEST(ValueSpec, ListOfRanges) {
  EXPECT_EQ(parse_int_spec("1;8:32:*2;100", ';'), (I{1, 8, 16, 32, 100}));
}

TEST(ValueSpec, Unsigned) {
  EXPECT_EQ(parse_uint_spec("18446744073709551615", ','), U{18446744073709551615ull});
  EXPECT_EQ(parse_uint_spec("0:4:2", ','), (U{0, 2, 4}));
  EXPECT_EQ(parse_uint_spec("18446744073709551614:18446744073709551615", ','),
            (U{18446744073709551614ull, 18446744073709551615ull}));
  EXPECT_TRUE(throws_with([] { parse_uint_spec("-1", ','); }, "value '-1' is not a non-negative whole number"));
  EXPECT_TRUE(throws_with([] { parse_uint_spec("18446744073709551616", ','); }, "out of range"));
}

TEST(ValueSpec, Words) {
  EXPECT_EQ(parse_word_spec("fast", ';'), S{"fast"});
  EXPECT_EQ(parse_word_spec("fast; torch", ';'), (S{"fast", "torch"}));
  EXPECT_TRUE(throws_with([] { parse_word_spec("", ';'); }, "empty value"));
  EXPECT_TRUE(throws_with([] { parse_word_spec("fast;", ';'); }, "empty item"));
}

TEST(ValueSpec, Scorers) {
  EXPECT_EQ(parse_scorer_spec("dot", ','), S{"dot"});
  EXPECT_EQ(parse_scorer_spec("dot,additive,dot", ','), (S{"dot", "additive"}));
  EXPECT_EQ(parse_scorer_spec("all", ','), all_scorers());
  S dot_first = {"dot"};
  for (const std::string& s : all_scorers())
    if (s != "dot") dot_first.push_back(s);
  EXPECT_EQ(parse_scorer_spec("dot;all", ';'), dot_first);
  EXPECT_TRUE(throws_with([] { parse_scorer_spec("dot,bahdanau", ','); },
                          "unknown scorer 'bahdanau'; known: all, " + scorer_names()));
}

// ---- value_spec: errors ----

TEST(ValueSpecErrors, EmptyAndJunk) {
  EXPECT_TRUE(throws_with([] { parse_int_spec("", ','); }, "empty value"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("  ", ','); }, "empty value"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("8,,16", ','); }, "empty item"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("8,", ','); }, "empty item"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("abc", ','); }, "value 'abc' is not a whole number"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("+8", ','); }, "is not a whole number"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("8x", ','); }, "trailing characters 'x' after value '8'"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("1e3", ','); }, "trailing characters"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("9223372036854775808", ','); }, "out of range"));
}

TEST(ValueSpecErrors, BadRanges) {
  EXPECT_TRUE(throws_with([] { parse_int_spec("100:10", ','); }, "start 100 > end 10"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("10:100:0", ','); }, "step greater than 0, got 0"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("10:100:-5", ','); }, "step greater than 0, got -5"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("10:100:", ','); }, "range step '' is not a whole number"));
  EXPECT_TRUE(throws_with([] { parse_int_spec(":100", ','); }, "range start '' is not"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("10:", ','); }, "range end '' is not"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("10:x", ','); }, "range end 'x' is not"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("10:100:10:5", ','); }, "trailing characters ':5'"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("16:1024:*1", ','); }, "factor of at least 2, got 1"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("16:1024:*0", ','); }, "factor of at least 2, got 0"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("16:1024:*", ','); }, "range factor '' is not"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("0:1024:*2", ','); }, "must start at 1 or more"));
}

TEST(ValueSpecErrors, TooManyValues) {
  EXPECT_EQ(parse_int_spec("1:100000", ',').size(), kMaxSpecValues);
  EXPECT_TRUE(throws_with([] { parse_int_spec("1:100001", ','); }, "more than 100000 values"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("1:9223372036854775807", ','); }, "more than 100000 values"));
  EXPECT_TRUE(throws_with([] { parse_int_spec("1:60000,1:60000", ','); }, "more than 100000 values"));
  EXPECT_TRUE(throws_with([] { parse_uint_spec("0:18446744073709551615", ','); }, "more than 100000 values"));
}

// ---- grid ----

Problem base() {
  Problem p;
  p.scorer = "additive";
  return p;
}

TEST(Grid, FieldNamesAndFlags) {
  EXPECT_EQ(problem_fields(), (S{"scorer", "batch", "src_len", "tgt_len", "emb_dim", "enc_dim", "dec_dim",
                                 "attn_dim", "vocab", "threads", "impl", "dtype", "seed", "init", "len_min"}));
  EXPECT_EQ(flag_name("src_len"), "--src-len");
  EXPECT_EQ(flag_name("batch"), "--batch");
}

TEST(Grid, NoFieldsIsTheDefaultPoint) {
  const Grid g = expand({GridBlock{}}, base(), ',');
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].scorers, S{"additive"});
  EXPECT_EQ(repro_flags(g[0].problem), repro_flags(base()));
  EXPECT_TRUE(expand({}, base(), ',').empty());
}

TEST(Grid, ProductSizeAndOrderFirstFieldSlowest) {
  const Grid g = expand({{{{"src_len", "10,50"}, {"threads", "1,2"}, {"attn_dim", "8:32:*2"}}}}, base(), ',');
  ASSERT_EQ(g.size(), 12u);
  std::size_t n = 0;
  for (std::int64_t L : {10, 50})
    for (int t : {1, 2})
      for (std::int64_t A : {8, 16, 32}) {
        EXPECT_EQ(g[n].problem.src_len, L) << n;
        EXPECT_EQ(g[n].problem.threads, t) << n;
        EXPECT_EQ(g[n].problem.attn_dim, A) << n;
        EXPECT_EQ(g[n].problem.batch, base().batch) << n;  // not named: default
        ++n;
      }
  // Reversing the field order reverses which varies fastest.
  const Grid r = expand({{{{"threads", "1,2"}, {"src_len", "10,50"}}}}, base(), ',');
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].problem.src_len, 10);
  EXPECT_EQ(r[1].problem.src_len, 50);
  EXPECT_EQ(r[1].problem.threads, 1);
}

TEST(Grid, EveryFieldIsSettable) {
  const Grid g = expand({{{{"scorer", "dot"},
                           {"batch", "3"},
                           {"src_len", "11"},
                           {"tgt_len", "4"},
                           {"emb_dim", "5"},
                           {"enc_dim", "6"},
                           {"dec_dim", "7"},
                           {"attn_dim", "9"},
                           {"vocab", "12"},
                           {"threads", "2"},
                           {"impl", "fused"},
                           {"dtype", "bf16"},
                           {"seed", "18446744073709551615"},
                           {"init", "torch"},
                           {"len_min", "3"}}}},
                        base(), ',');
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(repro_flags(g[0].problem),
            "--scorer dot --batch 3 --src-len 11 --tgt-len 4 --emb-dim 5 --enc-dim 6 --dec-dim 7 --attn-dim 9 "
            "--vocab 12 --threads 2 --impl fused --dtype bf16 --seed 18446744073709551615 --init torch --len-min 3");
  EXPECT_EQ(g[0].scorers, S{"dot"});
}

TEST(Grid, ScorersAreAListPerPointNotADimension) {
  const Grid g = expand({{{{"scorer", "all"}, {"src_len", "10,20"}}}}, base(), ',');
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].scorers, all_scorers());
  EXPECT_EQ(g[1].scorers, all_scorers());
  EXPECT_EQ(g[0].problem.scorer, all_scorers().front());
}

TEST(Grid, UnionAcrossBlocksMergesScorersAndDropsDuplicates) {
  const std::vector<GridBlock> blocks = {
      {{{"scorer", "dot"}, {"src_len", "10,20"}}},
      {{{"scorer", "general,dot"}, {"src_len", "20,30"}}},
      {{{"src_len", "10"}}},  // default scorer
      {{{"src_len", "30,30"}, {"scorer", "dot"}}},
  };
  const Grid g = expand(blocks, base(), ',');
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].problem.src_len, 10);
  EXPECT_EQ(g[0].scorers, (S{"dot", "additive"}));
  EXPECT_EQ(g[1].problem.src_len, 20);
  EXPECT_EQ(g[1].scorers, (S{"dot", "general"}));
  EXPECT_EQ(g[2].problem.src_len, 30);
  EXPECT_EQ(g[2].scorers, (S{"general", "dot"}));
}

TEST(Grid, PointsDifferingInAnyFieldStayApart) {
  const Grid g = expand({{{{"init", "fast,torch"}}}, {{{"seed", "0,1"}}}, {{{"len_min", "0,1"}}}}, base(), ',');
  EXPECT_EQ(g.size(), 4u);  // (fast,0,0) (torch) (seed 1) (len_min 1)
}

// Runs expand and returns the GridError it throws.
GridError grid_error(const std::vector<GridBlock>& blocks, const Problem& defaults = base()) {
  try {
    expand(blocks, defaults, ',');
  } catch (const GridError& e) {
    return e;
  }
  ADD_FAILURE() << "no GridError thrown";
  return GridError("", "", "");
}

TEST(GridErrors, ParseErrorNamesFieldSpecAndBlock) {
  const GridError e = grid_error({{{{"batch", "2"}}}, {{{"batch", "1"}, {"src_len", "10,x"}}}});
  EXPECT_EQ(e.field(), "src_len");
  EXPECT_EQ(e.value(), "10,x");
  EXPECT_EQ(e.block(), 1u);
  EXPECT_EQ(e.reason(), "value 'x' is not a whole number");
  EXPECT_STREQ(e.what(), "--src-len: bad value '10,x': value 'x' is not a whole number");
}

TEST(GridErrors, SizeErrorsNameTheOneBadValue) {
  GridError e = grid_error({{{{"batch", "0,2"}}}});
  EXPECT_EQ(e.field(), "batch");
  EXPECT_EQ(e.value(), "0");
  EXPECT_EQ(e.reason(), "must be a positive whole number");

  e = grid_error({{{{"enc_dim", "16,15"}}}});
  EXPECT_EQ(e.field(), "enc_dim");
  EXPECT_EQ(e.value(), "15");
  EXPECT_NE(e.reason().find("must be even"), std::string::npos) << e.reason();

  // Only wrong in combination: len_min > src_len blames len_min.
  e = grid_error({{{{"len_min", "5"}, {"src_len", "10,4"}}}});
  EXPECT_EQ(e.field(), "len_min");
  EXPECT_EQ(e.value(), "5");
  EXPECT_NE(e.reason().find("--src-len (4)"), std::string::npos) << e.reason();
  EXPECT_EQ(e.reason().find("got"), std::string::npos) << e.reason();

  e = grid_error({{{{"threads", "2147483648"}}}});
  EXPECT_EQ(e.field(), "threads");
  EXPECT_EQ(e.reason(), "value 2147483648 is out of range");
}

TEST(GridErrors, WordFields) {
  GridError e = grid_error({{{{"dtype", "f32,f16"}}}});
  EXPECT_EQ(e.field(), "dtype");
  EXPECT_EQ(e.reason(), "unknown dtype 'f16'; known: f32, bf16");
  e = grid_error({{{{"impl", "onednn,torch"}}}});
  EXPECT_EQ(e.field(), "impl");
  EXPECT_EQ(e.reason(), "unknown impl 'torch'; known: onednn, fused");
  e = grid_error({{{{"init", "xavier"}}}});
  EXPECT_EQ(e.field(), "init");
  EXPECT_EQ(e.reason(), "unknown init 'xavier'; known: fast, torch");
  e = grid_error({{{{"scorer", "luong"}}}});
  EXPECT_EQ(e.field(), "scorer");
  EXPECT_EQ(e.value(), "luong");
  EXPECT_NE(e.reason().find("known: all, " + scorer_names()), std::string::npos);
}

TEST(GridErrors, UnknownOrRepeatedFieldAndHugeBlocks) {
  GridError e = grid_error({{{{"heads", "8"}}}});
  EXPECT_EQ(e.field(), "heads");
  EXPECT_NE(e.reason().find("unknown field; known: scorer, batch, src_len"), std::string::npos);
  e = grid_error({{{{"batch", "8"}, {"batch", "16"}}}});
  EXPECT_EQ(e.field(), "batch");
  EXPECT_EQ(e.reason(), "field given twice");
  e = grid_error({{{{"batch", "1:1000"}, {"src_len", "1:1000"}, {"attn_dim", "1:2"}}}});
  EXPECT_EQ(e.field(), "attn_dim");
  EXPECT_NE(e.reason().find("more than 1000000 points"), std::string::npos);
}

}  // namespace
}  // namespace attnbench
