// Size arithmetic never wraps: Size saturates, checked_product throws, the estimates and the
// plan checks refuse what cannot be represented.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/checked_size.hpp"
#include "core/problem.hpp"
#include "driver/estimate.hpp"
#include "driver/grid.hpp"
#include "driver/progress.hpp"
#include "driver/run_settings.hpp"

namespace attnbench {
namespace {

constexpr std::int64_t kTwo61 = std::int64_t{1} << 61;

TEST(Size, SaturatesInsteadOfWrapping) {
  EXPECT_EQ((Size(std::int64_t{6}) * Size(std::int64_t{7})).value, 42u);
  EXPECT_TRUE((Size(kTwo61) * Size(8)).overflowed());
  EXPECT_TRUE((Size(kSizeOverflow) + Size(1)).overflowed());
  EXPECT_TRUE((Size(kSizeOverflow) * Size(1)).overflowed());
  EXPECT_EQ((Size(kTwo61) * Size(4)).value, std::uint64_t{1} << 63);
  EXPECT_EQ(Size(std::int64_t{-5}).value, 0u);
}

TEST(CheckedProduct, ThrowsWhereTheProductLeavesInt64) {
  EXPECT_EQ(checked_product({2, 3, 7}, "dims"), 42);
  EXPECT_THROW(checked_product({kTwo61, 4}, "dims"), std::length_error);
  EXPECT_THROW(checked_product({2, -1}, "dims"), std::length_error);
}

TEST(EstimatedBytes, OverflowSaturatesAndValidateRefuses) {
  Problem p;
  p.enc_dim = kTwo61;  // h * h alone is 2^120
  EXPECT_EQ(estimated_bytes(p), kSizeOverflow);
  EXPECT_THROW(validate(p), std::invalid_argument);
  p = Problem{};
  p.batch = std::int64_t{1} << 55;  // each product fits in double, not in 64-bit bytes
  EXPECT_EQ(estimated_bytes(p), kSizeOverflow);
  p = Problem{};
  EXPECT_LT(estimated_bytes(p), std::uint64_t{1} << 30);
  EXPECT_GT(estimated_bytes(p), 0u);
}

TEST(EstimatedBytes, PointSumSaturates) {
  GridPoint point{Problem{}, {"dot", "general"}};
  point.problem.src_len = kTwo61;
  EXPECT_EQ(point_memory_bytes(point), kSizeOverflow);
}

TEST(Validate, RefusesAbsurdThreads) {
  Problem p;
  p.threads = 2000000000;
  EXPECT_THROW(validate_sizes(p), std::invalid_argument);
  p.threads = kMaxThreads;
  EXPECT_NO_THROW(validate_sizes(p));
}

TEST(RunSettings, RefusesAbsurdRepetitionsAndMinTime) {
  PointSettings s;
  EXPECT_THROW(set_setting(s, "repetitions", "1000000000", ','), std::invalid_argument);
  EXPECT_THROW(set_setting(s, "min_time", "1e9", ','), std::invalid_argument);
  set_setting(s, "repetitions", std::to_string(kMaxRepetitions), ',');
  EXPECT_EQ(s.bench.repetitions, kMaxRepetitions);
}

TEST(Expand, ABlockWithoutScorerRunsTheDefaultSpec) {
  Problem defaults;
  defaults.scorer = "all";
  const Grid grid = expand({GridBlock{{{"batch", "2"}}}}, defaults, ',');
  ASSERT_EQ(grid.size(), 1u);
  EXPECT_GT(grid[0].scorers.size(), 1u);
  for (const std::string& s : grid[0].scorers) EXPECT_NE(s, "all");
  defaults.scorer = "nonsense";
  EXPECT_THROW(expand({GridBlock{{{"batch", "2"}}}}, defaults, ','), GridError);
}

TEST(Expand, TheTotalOverAllBlocksIsCapped) {
  const GridBlock thousand{{{"src_len", "1:1000"}, {"scorer", "dot"}}};
  const GridBlock other{{{"tgt_len", "1:1000"}, {"scorer", "dot"}}};
  EXPECT_EQ(expand({thousand, other}, Problem{}, ',', 2000).size(), 1999u);  // one point shared
  try {
    expand({thousand, other}, Problem{}, ',', 1500);
    FAIL() << "no error";
  } catch (const GridError& e) {
    EXPECT_EQ(e.block(), 1u);
    EXPECT_NE(std::string(e.what()).find("more than 1500 points in all"), std::string::npos) << e.what();
  }
}

TEST(FormatDuration, HugeAndInvalidEstimatesNeverWrap) {
  EXPECT_EQ(format_duration(42), "42s");
  EXPECT_EQ(format_duration(1e12), "2.78e+08h");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "infh");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::quiet_NaN()), "?");
}

}  // namespace
}  // namespace attnbench
