// FusedProjection, the fused step's query: both of its paths (its own loop below
// kSmallProjectionMacs, oneDNN above it) against a double reference, its parts per thread,
// and the precision ATTNBENCH_FUSED_BF16_QUERY sets for a bf16 step.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
#include "core/onednn_context.hpp"
#include "core/param_source.hpp"
#include "core/reference.hpp"
#include "test_support.hpp"

namespace attnbench {
namespace {

using test::count;
using test::near_reference;
using test::random_floats;
using test::widen;

struct ProjectionPoint {
  std::int64_t rows, in, out;
  bool uses_onednn;
};

class FusedProjectionPaths : public ::testing::TestWithParam<ProjectionPoint> {};

TEST_P(FusedProjectionPaths, MatchesScaledLinearReference) {
  const ProjectionPoint point = GetParam();
  ParamSource source(InitKind::fast, 5);
  const LinearParams W = make_linear(source, point.in, point.out, false);
  const std::vector<float> x = random_floats(count(point.rows * point.in), 9);
  for (float scale : {1.f, 0.125f}) {
    SCOPED_TRACE("scale " + std::to_string(scale));
    OneDnnContext ctx(1);
    FusedProjection projection(ctx, point.rows, W, 1, scale);
    EXPECT_EQ(projection.uses_onednn(), point.uses_onednn);
    std::vector<float> y(count(point.rows * point.out), std::nanf(""));
    projection.run(x.data(), y.data());
    std::vector<double> ref = ref::linear(widen(x), point.rows, W);
    for (double& r : ref) r *= scale;
    EXPECT_TRUE(near_reference("y", y, ref));
  }
}

INSTANTIATE_TEST_SUITE_P(
    BothSidesOfTheThreshold, FusedProjectionPaths,
    ::testing::Values(ProjectionPoint{2, 20, 32, false},     // the lesson's W s
                      ProjectionPoint{1, 1, 1, false},       // smallest
                      ProjectionPoint{4, 32, 63, false},     // just below kSmallProjectionMacs
                      ProjectionPoint{4, 32, 64, true},      // exactly at it
                      ProjectionPoint{32, 256, 256, true}),  // B32/D256/A256
    [](const auto& info) {
      std::ostringstream name;  // not operator+: GCC 12 warns falsely (-Wrestrict) on such chains
      name << "r" << info.param.rows << "_i" << info.param.in << "_o" << info.param.out;
      return name.str();
    });

TEST(FusedProjectionPaths, AParallelStepsQueryHasAPartPerThreadAndRestoresOpenMps) {
  // On a 2-thread context, a 33 x 64 x 64 query built for 1 thread (a serial step's), 2 and 3:
  // that many parts of 16 or 17, 11 rows; run() and the parts run by as many threads write
  // the same values, and OpenMP's thread count is the context's again afterwards.
  ParamSource source(InitKind::fast, 7);
  const std::int64_t rows = 33;
  const LinearParams W = make_linear(source, 64, 64, false);
  const std::vector<float> x = random_floats(count(rows * 64), 11);
  const std::vector<double> ref = ref::linear(widen(x), rows, W);
  OneDnnContext ctx(2);
  for (const int threads : {1, 2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    FusedProjection projection(ctx, rows, W, threads);
    EXPECT_TRUE(projection.uses_onednn());
    EXPECT_EQ(projection.parts(), threads);
    EXPECT_EQ(omp_get_max_threads(), 2);
    std::vector<float> whole(count(rows * 64), std::nanf("")), in_parts = whole;
    projection.run(x.data(), whole.data());
    EXPECT_TRUE(near_reference("run", whole, ref));
    std::vector<RowRange> written(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
    written[static_cast<std::size_t>(omp_get_thread_num())] =
        projection.run_part(x.data(), in_parts.data(), omp_get_thread_num(), omp_get_num_threads());
    EXPECT_EQ(in_parts, whole);
    for (int part = 0; part < threads; ++part) {
      EXPECT_EQ(written[static_cast<std::size_t>(part)].first, rows * part / threads) << "part " << part;
      EXPECT_EQ(written[static_cast<std::size_t>(part)].count, rows * (part + 1) / threads - rows * part / threads);
    }
  }
}

TEST(FusedProjectionPaths, PartsOtherThanItsOwnLeaveEveryRowToPartZero) {
  // A query of 2 parts called as 1 part writes every row; one of 1 part called as 2 parts
  // writes every row in part 0 and none in part 1.
  ParamSource source(InitKind::fast, 7);
  const LinearParams W = make_linear(source, 64, 64, false);
  const std::vector<float> x = random_floats(count(8 * 64), 13);
  const std::vector<double> ref = ref::linear(widen(x), 8, W);
  OneDnnContext ctx(2);
  FusedProjection two(ctx, 8, W, 2), one(ctx, 8, W, 1);
  std::vector<float> y(count(8 * 64), std::nanf(""));
  const RowRange all = two.run_part(x.data(), y.data(), 0, 1);
  EXPECT_EQ(all.first, 0);
  EXPECT_EQ(all.count, 8);
  EXPECT_TRUE(near_reference("2 parts as 1", y, ref));
  std::fill(y.begin(), y.end(), std::nanf(""));
  EXPECT_FALSE(one.splits_into(2));
  EXPECT_EQ(one.run_part(x.data(), y.data(), 1, 2).count, 0);
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return std::isnan(v); }));
  EXPECT_EQ(one.run_part(x.data(), y.data(), 0, 2).count, 8);
  EXPECT_TRUE(near_reference("1 part as 2", y, ref));
}

// ATTNBENCH_FUSED_BF16_QUERY's values: best (the CPU's rule), bf16 and f32 on any CPU.
class FusedBf16Query : public ::testing::TestWithParam<const char*> {};

TEST_P(FusedBf16Query, HasAPartPerThreadLikeAnF32OneAndMultipliesInTheSetPrecision) {
  // On a 2-thread context, queries of 32 rows of 256 with 50 and 383 outputs (410K and 3.1M
  // multiply-adds) built for 2 threads have 2 parts in bf16 as in f32, so run_part writes
  // even parts for 1 or 2 threads but not for 3. On a bf16 context the matmul is bf16 exactly
  // where the setting says bf16, or says best and bf16_matmul_outruns_f32(): y is the product
  // of the bf16-rounded inputs there, else the f32 context's y bit for bit. An f32 context
  // multiplies in f32 whatever the setting.
  const std::string setting = GetParam();
  const test::ScopedEnv query("ATTNBENCH_FUSED_BF16_QUERY", setting);
  const bool bf16_query = setting == "bf16" || (setting == "best" && bf16_matmul_outruns_f32());
  EXPECT_STREQ(fused_bf16_query_name(), bf16_query ? "bf16" : "f32");
  EXPECT_EQ(fused_bf16_query_setting_error(), "");
  const std::int64_t rows = 32, in = 256;
  const std::vector<float> x = random_floats(count(rows * in), 12);
  for (const DType dtype : {DType::bf16, DType::f32}) {
    OneDnnContext ctx(2, dtype);
    for (const std::int64_t out : {50, 383}) {
      SCOPED_TRACE(std::string(dtype == DType::bf16 ? "bf16 " : "f32 ") + std::to_string(out) + " outputs");
      ParamSource source(InitKind::fast, 8);
      const LinearParams W = make_linear(source, in, out, false);
      FusedProjection projection(ctx, rows, W, 2);
      EXPECT_EQ(projection.parts(), 2);
      EXPECT_TRUE(projection.splits_into(1));
      EXPECT_TRUE(projection.splits_into(2));
      EXPECT_FALSE(projection.splits_into(3));
      EXPECT_EQ(omp_get_max_threads(), 2);
      const bool in_bf16 = dtype == DType::bf16 && bf16_query;
      EXPECT_EQ(projection.multiplies_in_bf16(), in_bf16);
      std::vector<float> y(count(rows * out), std::nanf(""));
      projection.run(x.data(), y.data());
      if (dtype == DType::bf16 && !in_bf16) {
        OneDnnContext f32_ctx(2);
        FusedProjection f32_projection(f32_ctx, rows, W, 2);
        std::vector<float> f32_y(y.size(), std::nanf(""));
        f32_projection.run(x.data(), f32_y.data());
        EXPECT_EQ(y, f32_y);
      }
      auto as_computed = [&](std::vector<float> v) {  // bf16 rounds each input (nearest even)
        if (!in_bf16) return v;
        std::vector<std::uint16_t> bits(v.size());
        fused::to_bf16(v.data(), static_cast<std::int64_t>(v.size()), bits.data());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::bit_cast<float>(std::uint32_t{bits[i]} << 16);
        return v;
      };
      LinearParams W_used = W;
      W_used.weight = as_computed(W.weight);
      EXPECT_TRUE(near_reference("y", y, ref::linear(widen(as_computed(x)), rows, W_used)));
      // The bf16 product misses the f32 tolerance against the unrounded inputs: the check tells the two apart.
      if (in_bf16) {
        EXPECT_FALSE(near_reference("y against unrounded inputs", y, ref::linear(widen(x), rows, W)));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Settings, FusedBf16Query, ::testing::Values("best", "bf16", "f32"),
                         [](const auto& info) { return std::string(info.param); });

TEST(FusedBf16QuerySetting, ABadOneIsOneLineNamingItAndEveryValue) {
  const test::ScopedEnv query("ATTNBENCH_FUSED_BF16_QUERY", "fp16");
  EXPECT_EQ(fused_bf16_query_setting_error(),
            "ATTNBENCH_FUSED_BF16_QUERY: bad value 'fp16': best (the default: bf16 where oneDNN's bf16 matmul "
            "outruns its f32 one, else f32), bf16 (multiply in bf16) or f32 (multiply in f32)");
  EXPECT_STREQ(fused_bf16_query_name(), bf16_matmul_outruns_f32() ? "bf16" : "f32");  // taken for best
}

TEST(FusedProjectionPaths, TheLoopStopsExactlyAtTheThresholdAndBothPathsAgreeAcrossIt) {
  // Shapes one multiply-add below and exactly at kSmallProjectionMacs, whatever its value:
  // the path switches there, and both paths compute the same y for the same W and x.
  const std::int64_t rows = 2, in = 4, below_out = (kSmallProjectionMacs - 1) / (rows * in);
  ASSERT_LT(rows * in * below_out, kSmallProjectionMacs);
  ASSERT_EQ(kSmallProjectionMacs % (rows * in), 0) << "pick rows and in that divide the threshold";
  const std::int64_t at_out = kSmallProjectionMacs / (rows * in);
  ParamSource source(InitKind::fast, 6);
  const LinearParams W = make_linear(source, in, at_out, false);
  const std::vector<float> x = random_floats(count(rows * in), 10);
  OneDnnContext ctx(1);
  FusedProjection at(ctx, rows, W, 1, 0.5f);
  LinearParams W_below = W;  // the first below_out rows of W (out, in)
  W_below.out = below_out;
  W_below.weight.resize(count(below_out * in));
  FusedProjection below(ctx, rows, W_below, 1, 0.5f);
  EXPECT_TRUE(at.uses_onednn());
  EXPECT_FALSE(below.uses_onednn());
  std::vector<float> y_at(count(rows * at_out), std::nanf("")), y_below(count(rows * below_out), std::nanf(""));
  at.run(x.data(), y_at.data());
  below.run(x.data(), y_below.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> same(y_at.begin() + r * at_out, y_at.begin() + r * at_out + below_out);
    std::vector<double> ref;
    for (std::int64_t o = 0; o < below_out; ++o) ref.push_back(y_below[count(r * below_out + o)]);
    EXPECT_TRUE(near_reference("row " + std::to_string(r), same, ref));
  }
}

}  // namespace
}  // namespace attnbench
