// validate(): every rejection names the flag and the bad value; source_lengths();
// find_scorer() on an unknown name.
#include "core/problem.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "variants/registry.hpp"

namespace attnbench {
namespace {

// The message of the std::invalid_argument that validate(p) throws, or "" if none.
std::string rejection(const Problem& p) {
  try {
    validate(p);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult mentions(const std::string& message, const std::vector<std::string>& parts) {
  if (message.empty()) return ::testing::AssertionFailure() << "validate() accepted the problem";
  if (message.find('\n') != std::string::npos)
    return ::testing::AssertionFailure() << "message \"" << message << "\" is not one line";
  for (const std::string& part : parts)
    if (message.find(part) == std::string::npos)
      return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << part << "\"";
  return ::testing::AssertionSuccess();
}

TEST(Validate, AcceptsTheDefaultsAndSmallestPoint) {
  EXPECT_NO_THROW(validate(Problem{}));
  Problem p;
  p.batch = p.src_len = p.tgt_len = p.emb_dim = p.dec_dim = p.attn_dim = p.vocab = 1;
  p.enc_dim = 2;
  p.threads = 1;
  EXPECT_NO_THROW(validate(p));
}

struct SizeFlag {
  const char* flag;
  std::function<void(Problem&, std::int64_t)> set;
};

class ValidateSize : public ::testing::TestWithParam<SizeFlag> {};

TEST_P(ValidateSize, RejectsZeroNamingFlagAndValue) {
  Problem p;
  GetParam().set(p, 0);
  EXPECT_TRUE(mentions(rejection(p), {GetParam().flag, "0"}));
}

TEST_P(ValidateSize, RejectsNegativeNamingFlagAndValue) {
  Problem p;
  GetParam().set(p, -3);
  EXPECT_TRUE(mentions(rejection(p), {GetParam().flag, "-3"}));
}

INSTANTIATE_TEST_SUITE_P(
    EveryFlag, ValidateSize,
    ::testing::Values(SizeFlag{"--batch", [](Problem& p, std::int64_t v) { p.batch = v; }},
                      SizeFlag{"--src-len", [](Problem& p, std::int64_t v) { p.src_len = v; }},
                      SizeFlag{"--tgt-len", [](Problem& p, std::int64_t v) { p.tgt_len = v; }},
                      SizeFlag{"--emb-dim", [](Problem& p, std::int64_t v) { p.emb_dim = v; }},
                      SizeFlag{"--enc-dim", [](Problem& p, std::int64_t v) { p.enc_dim = v; }},
                      SizeFlag{"--dec-dim", [](Problem& p, std::int64_t v) { p.dec_dim = v; }},
                      SizeFlag{"--attn-dim", [](Problem& p, std::int64_t v) { p.attn_dim = v; }},
                      SizeFlag{"--vocab", [](Problem& p, std::int64_t v) { p.vocab = v; }},
                      SizeFlag{"--threads", [](Problem& p, std::int64_t v) { p.threads = static_cast<int>(v); }}),
    [](const ::testing::TestParamInfo<SizeFlag>& info) {
      std::string name = std::string(info.param.flag).substr(2);
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(Validate, RejectsOddEncDimExplainingWhy) {
  Problem p;
  p.enc_dim = 15;
  EXPECT_TRUE(mentions(rejection(p), {"--enc-dim", "15", "even", "bidirectional"}));
}

TEST(Validate, RejectsLenMinOutOfRange) {
  Problem p;
  p.src_len = 10;
  p.len_min = 11;
  EXPECT_TRUE(mentions(rejection(p), {"--len-min", "11", "10"}));
  p.len_min = -2;
  EXPECT_TRUE(mentions(rejection(p), {"--len-min", "-2"}));
}

TEST(Validate, AcceptsLenMinAtBothEnds) {
  Problem p;
  p.batch = 3;
  p.src_len = 10;
  for (std::int64_t len_min : {0, 1, 10}) {
    p.len_min = len_min;
    EXPECT_NO_THROW(validate(p)) << "len_min " << len_min;
  }
}

TEST(Validate, RejectsAPointTooLargeForMemory) {
  if (available_memory_bytes() == 0) GTEST_SKIP() << "MemAvailable unknown here";
  Problem p;
  p.vocab = 1'000'000'000;  // two embedding tables alone are 128 GB in f32
  EXPECT_TRUE(mentions(rejection(p), {"too large", "GiB", "--vocab"}));
}

TEST(Validate, EstimateGrowsWithEverySize) {
  const Problem base;
  const std::uint64_t b0 = estimated_bytes(base);
  for (auto grow : std::vector<std::function<void(Problem&)>>{
           [](Problem& p) { p.batch *= 2; }, [](Problem& p) { p.src_len *= 2; }, [](Problem& p) { p.vocab *= 2; },
           [](Problem& p) { p.enc_dim *= 2; }, [](Problem& p) { p.dec_dim *= 2; }, [](Problem& p) { p.attn_dim *= 2; },
           [](Problem& p) { p.emb_dim *= 2; }}) {
    Problem p = base;
    grow(p);
    EXPECT_GT(estimated_bytes(p), b0) << repro_flags(p);
  }
  // At least the four bytes of every element of both embedding tables.
  Problem big;
  big.vocab = 1'000'000;
  EXPECT_GE(estimated_bytes(big), 4u * 2u * 1'000'000u * static_cast<std::uint64_t>(big.emb_dim));
}

// --- source_lengths --------------------------------------------------------------------

std::vector<std::int64_t> lengths_of(std::int64_t batch, std::int64_t src_len, std::int64_t len_min) {
  Problem p;
  p.batch = batch;
  p.src_len = src_len;
  p.len_min = len_min;
  return source_lengths(p);
}

TEST(SourceLengths, DocumentedExample) { EXPECT_EQ(lengths_of(3, 10, 4), (std::vector<std::int64_t>{10, 7, 4})); }

TEST(SourceLengths, NoPaddingWhenLenMinIsZeroOrSrcLen) {
  EXPECT_EQ(lengths_of(4, 9, 0), std::vector<std::int64_t>(4, 9));
  EXPECT_EQ(lengths_of(4, 9, 9), std::vector<std::int64_t>(4, 9));
}

TEST(SourceLengths, BatchOneKeepsTheFullLength) { EXPECT_EQ(lengths_of(1, 7, 2), std::vector<std::int64_t>{7}); }

TEST(SourceLengths, EvenSpacingWhenItDivides) {
  EXPECT_EQ(lengths_of(4, 10, 1), (std::vector<std::int64_t>{10, 7, 4, 1}));
  EXPECT_EQ(lengths_of(2, 5, 1), (std::vector<std::int64_t>{5, 1}));
}

TEST(SourceLengths, RunsFromSrcLenDownToLenMinMonotonically) {
  for (std::int64_t batch : {2, 3, 5, 8, 13})
    for (std::int64_t src_len : {1, 2, 7, 17, 33})
      for (std::int64_t len_min = 1; len_min <= src_len; len_min += 3) {
        const std::vector<std::int64_t> n = lengths_of(batch, src_len, len_min);
        ASSERT_EQ(n.size(), static_cast<std::size_t>(batch));
        EXPECT_EQ(n.front(), src_len);
        EXPECT_EQ(n.back(), len_min);
        EXPECT_TRUE(std::is_sorted(n.rbegin(), n.rend())) << "batch " << batch << " len_min " << len_min;
      }
}

// --- find_scorer -----------------------------------------------------------------------

TEST(FindScorer, FindsEveryListedScorer) {
  for (const ScorerInfo& info : scorer_table()) EXPECT_STREQ(find_scorer(info.name).name, info.name);
}

TEST(FindScorer, UnknownNameThrowsListingEveryKnownName) {
  ASSERT_GE(scorer_table().size(), 5u);
  try {
    find_scorer("nope");
    FAIL() << "find_scorer(\"nope\") returned";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("nope"), std::string::npos) << message;
    for (const ScorerInfo& info : scorer_table())
      EXPECT_NE(message.find(info.name), std::string::npos) << message << " lacks " << info.name;
  }
}

TEST(FindScorer, TableHasTheDesignedScorers) {
  for (const char* name : {"additive", "additive_linear", "dot", "scaled_dot", "general", "location", "mlp"})
    EXPECT_NO_THROW(find_scorer(name)) << name;
}

}  // namespace
}  // namespace attnbench
