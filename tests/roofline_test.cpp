// The roofline: percent and bound on hand-made peaks, machine.json loading, and a tiny-shape
// run of the measuring functions round-tripped through load_roofline (no speed is asserted).
#include "driver/roofline.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/matmul_op.hpp"
#include "driver/roofline_measure.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_meta.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;

// 100 GFLOP/s and 10 GB/s at 1 thread: the ridge point is at 10 flop/byte.
Roofline hand_made() {
  Roofline r;
  r.by_threads[1] = Peak{100.0, 10.0, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  r.by_threads[2] = Peak{200.0, 16.0, 400.0, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  return r;
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnbench_roofline_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  fs::path dir_;
};

TEST(Roofline, PercentAboveTheRidgeIsAgainstThePeakFlops) {
  const Roofline r = hand_made();
  const StageCost cost{1000.0, 10.0};  // 100 flop/byte > 10: compute bound, roof 100 GFLOP/s
  EXPECT_DOUBLE_EQ(r.percent(1, DType::f32, cost, 20.0), 50.0);   // 1000 flops in 20 ns = 50 GFLOP/s
  EXPECT_DOUBLE_EQ(r.percent(1, DType::f32, cost, 10.0), 100.0);  // exactly at the roof
}

TEST(Roofline, PercentBelowTheRidgeIsAgainstTheBandwidthRoof) {
  const Roofline r = hand_made();
  const StageCost cost{1000.0, 1000.0};  // 1 flop/byte < 10: roof 1 x 10 GB/s = 10 GFLOP/s
  EXPECT_DOUBLE_EQ(r.percent(1, DType::f32, cost, 200.0), 50.0);  // 5 GFLOP/s
}

TEST(Roofline, PercentIsNanForAnUnmeasuredThreadCountOrNoTime) {
  const Roofline r = hand_made();
  EXPECT_TRUE(std::isnan(r.percent(3, DType::f32, StageCost{1000.0, 10.0}, 20.0)));
  EXPECT_TRUE(std::isnan(r.percent(1, DType::f32, StageCost{1000.0, 10.0}, 0.0)));
}

TEST(Roofline, BoundIsMemoryLeftOfTheRidgeAndComputeRightOfIt) {
  const Roofline r = hand_made();
  EXPECT_EQ(r.bound(1, DType::f32, StageCost{1000.0, 1000.0}), "memory");   // 1 flop/byte
  EXPECT_EQ(r.bound(1, DType::f32, StageCost{999.0, 100.0}), "memory");     // 9.99, just left of 10
  EXPECT_EQ(r.bound(1, DType::f32, StageCost{1000.0, 100.0}), "compute");   // at the ridge: both roofs meet
  EXPECT_EQ(r.bound(1, DType::f32, StageCost{1000.0, 10.0}), "compute");    // 100 flop/byte
  EXPECT_EQ(r.bound(1, DType::f32, StageCost{1000.0, 0.0}), "compute");     // no traffic at all
  // At 2 threads the ridge moves to 200 / 16 = 12.5 flop/byte.
  EXPECT_EQ(r.bound(2, DType::f32, StageCost{1100.0, 100.0}), "memory");
  EXPECT_EQ(r.bound(2, DType::f32, StageCost{1300.0, 100.0}), "compute");
  EXPECT_EQ(r.bound(3, DType::f32, StageCost{1000.0, 10.0}), "");  // not measured
}

TEST(Roofline, Bf16UsesTheBf16PeakAndIsUnknownWhereItWasNotMeasured) {
  const Roofline r = hand_made();
  // 2 threads: bf16 roof 400 GFLOP/s, ridge 400 / 16 = 25 flop/byte.
  EXPECT_DOUBLE_EQ(r.percent(2, DType::bf16, StageCost{4000.0, 10.0}, 20.0), 50.0);  // 200 of 400
  EXPECT_EQ(r.bound(2, DType::bf16, StageCost{2000.0, 100.0}), "memory");           // 20 < 25
  EXPECT_EQ(r.bound(2, DType::f32, StageCost{2000.0, 100.0}), "compute");           // 20 > 12.5
  EXPECT_TRUE(std::isnan(r.percent(1, DType::bf16, StageCost{1000.0, 10.0}, 20.0)));
  EXPECT_EQ(r.bound(1, DType::bf16, StageCost{1000.0, 10.0}), "");
}

// hand_made() with read-only figures per level: L2 1 MiB per core (100 / 180 GB/s at
// 1 / 2 threads), L3 32 MiB (50 / 80), DRAM read 20 / 30.
Roofline with_levels() {
  Roofline r = hand_made();
  r.l2_bytes = 1 << 20;
  r.l3_bytes = 32 << 20;
  r.by_threads[1].read_gbps = 20.0;
  r.by_threads[1].l2_gbps = 100.0;
  r.by_threads[1].l3_gbps = 50.0;
  r.by_threads[2].read_gbps = 30.0;
  r.by_threads[2].l2_gbps = 180.0;
  r.by_threads[2].l3_gbps = 80.0;
  return r;
}

TEST(RooflineLevels, TheWorkingSetPicksTheLevelItFitsIn) {
  const Roofline r = with_levels();
  const double MiB = 1 << 20;
  EXPECT_EQ(r.memory_level(1, 0.5 * MiB), "L2");
  EXPECT_EQ(*r.memory_gbps(1, 1.0 * MiB), 100.0);  // exactly one L2
  EXPECT_EQ(r.memory_level(1, 1.5 * MiB), "L3");   // more than one core's L2 ...
  EXPECT_EQ(r.memory_level(2, 1.5 * MiB), "L2");   // ... but within two cores' L2
  EXPECT_EQ(*r.memory_gbps(2, 1.5 * MiB), 180.0);
  EXPECT_EQ(*r.memory_gbps(1, 32 * MiB), 50.0);
  EXPECT_EQ(r.memory_level(1, 48 * MiB), "DRAM");
  EXPECT_EQ(*r.memory_gbps(2, 48 * MiB), 30.0);
  EXPECT_FALSE(r.memory_gbps(3, MiB).has_value());
  // Without read-only figures (older files) every working set gets the triad.
  const Roofline old = hand_made();
  EXPECT_EQ(old.memory_level(1, 0.5 * MiB), "triad");
  EXPECT_EQ(*old.memory_gbps(1, 0.5 * MiB), 10.0);
}

TEST(RooflineLevels, PercentAndBoundUseTheLevelsRoof) {
  const Roofline r = with_levels();
  // 1 flop/byte over 1 MB (in L2): roof 1 x 100 GB/s = 100 GFLOP/s, the f32 peak; 1e6 flops
  // in 20 us = 50 GFLOP/s is 50%, and the stage sits at the ridge: "compute".
  const StageCost in_l2{1e6, 1e6};
  EXPECT_DOUBLE_EQ(r.percent(1, DType::f32, in_l2, 20e3), 50.0);
  EXPECT_EQ(r.bound(1, DType::f32, in_l2), "compute");
  // The same intensity over 64 MB (DRAM, read-only 20 GB/s): roof 20 GFLOP/s.
  const StageCost in_dram{64e6, 64e6};
  EXPECT_DOUBLE_EQ(r.percent(1, DType::f32, in_dram, 64e6 / 10.0), 50.0);  // 10 of 20 GFLOP/s
  EXPECT_EQ(r.bound(1, DType::f32, in_dram), "memory");
  // 16 MB fits in L3: roof 50 GFLOP/s.
  const StageCost in_l3{16e6, 16e6};
  EXPECT_DOUBLE_EQ(r.percent(1, DType::f32, in_l3, 16e6 / 25.0), 50.0);
}

TEST(RooflineLevels, TheMeasuredL3FitOverridesTheL3Size) {
  // A guest whose sysfs names its host's 480 MiB L3, of which 120 MiB read as L3 on 1 thread.
  Roofline r = with_levels();
  const double MiB = 1 << 20;
  r.l3_bytes = 480 * MiB;
  r.by_threads[1].l3_fit_bytes = 120 * MiB;
  EXPECT_EQ(r.memory_level(1, 120 * MiB), "L3");
  EXPECT_EQ(r.memory_level(1, 121 * MiB), "DRAM");
  EXPECT_EQ(*r.memory_gbps(1, 121 * MiB), 20.0);
  EXPECT_EQ(r.memory_level(2, 400 * MiB), "L3");  // no fit measured at 2 threads: the L3's size
}

// A read-only bandwidth curve (bytes -> GB/s) that records the sizes asked for.
struct Curve {
  std::vector<std::pair<double, double>> steps;  // (up to bytes, GB/s), ascending
  std::vector<double> asked;
  double operator()(double bytes) {
    asked.push_back(bytes);
    for (const auto& [limit, gbps] : steps)
      if (bytes <= limit) return gbps;
    return steps.back().second;
  }
};

TEST(RooflineMeasure, L3RoofIsTheLargestHalvingThatReadsNearTheFastest) {
  const double MiB = 1 << 20;
  // The Xeon guest of 2026-12-04 on 1 thread: sysfs L3 480 MiB, L2 2 MiB; 64 MiB read at
  // 29 GB/s, 128 MiB at 19.1, 256 MiB at DRAM's 15.6 (read_gbps 16.7).
  Curve xeon{{{2 * MiB, 168.0}, {64 * MiB, 29.0}, {128 * MiB, 19.1}, {1e12, 15.6}}, {}};
  const std::optional<CacheRoof> roof = measure_l3_roof(480 * MiB, 2 * MiB, 16.7, std::ref(xeon));
  ASSERT_TRUE(roof.has_value());
  EXPECT_EQ(roof->gbps, 29.0);
  EXPECT_EQ(roof->fit_bytes, 120 * MiB);
  EXPECT_EQ(xeon.asked, (std::vector<double>{240 * MiB, 120 * MiB, 60 * MiB, 30 * MiB, 15 * MiB, 7.5 * MiB}));
  // The Zen 4 on 1 thread: half of its 32 MiB L3 reads at 62.6 GB/s, DRAM at 25.6.
  Curve zen4{{{1 * MiB, 113.8}, {32 * MiB, 62.6}, {1e12, 25.6}}, {}};
  const std::optional<CacheRoof> whole = measure_l3_roof(32 * MiB, 1 * MiB, 25.6, std::ref(zen4));
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->gbps, 62.6);
  EXPECT_EQ(whole->fit_bytes, 32 * MiB);
  EXPECT_EQ(zen4.asked, (std::vector<double>{16 * MiB, 8 * MiB, 4 * MiB, 2 * MiB}));
  // The Zen 5 guest of 2026-12-06 on 1 thread: CPUID names 508 MiB of L3 (no sysfs), L2
  // 1 MiB, DRAM read-only 31.8 GB/s. 127 MiB reads at 1.4x DRAM and 64 MiB at 1.6x, but only
  // up to 16 MiB near the 8 MiB's 93.6: the L3 is its 32 MiB CCD's.
  Curve zen5{{{8 * MiB, 93.6}, {16 * MiB, 84.3}, {32 * MiB, 68.6}, {64 * MiB, 52.4}, {128 * MiB, 44.1}, {1e12, 37.8}},
             {}};
  const std::optional<CacheRoof> ccd = measure_l3_roof(508 * MiB, 1 * MiB, 31.8, std::ref(zen5));
  ASSERT_TRUE(ccd.has_value());
  EXPECT_EQ(ccd->gbps, 84.3);
  EXPECT_EQ(ccd->fit_bytes, 31.75 * MiB);
  EXPECT_EQ(zen5.asked.size(), 7u);  // 254 MiB down to 3.97 MiB
  // No part of the L3 reads 1.5x faster than DRAM: none is the L3's.
  Curve flat{{{1e12, 20.0}}, {}};
  EXPECT_FALSE(measure_l3_roof(64 * MiB, 4 * MiB, 16.0, std::ref(flat)).has_value());
  EXPECT_EQ(flat.asked, (std::vector<double>{32 * MiB, 16 * MiB, 8 * MiB}));
  // Without the L2's size the small halvings would read from the L1 or the L2: none is taken.
  Curve caches{{{1 * MiB, 300.0}, {32 * MiB, 62.6}, {1e12, 25.6}}, {}};
  EXPECT_FALSE(measure_l3_roof(32 * MiB, 0, 25.6, std::ref(caches)).has_value());
  EXPECT_TRUE(caches.asked.empty());
}

using LoadRoofline = TempDir;

TEST_F(LoadRoofline, ReadsTheReadOnlyFiguresAndCacheSizes) {
  const fs::path file = write("machine.json", R"({
    "threads": {"1": {"f32_gflops": 80, "gbps": 20, "read_gbps": 25.5, "l2_gbps": 150.25, "l3_gbps": 60,
                      "l3_fit_bytes": 16777216},
                "2": {"f32_gflops": 150, "gbps": 30, "read_gbps": null, "l2_gbps": null, "l3_gbps": null}},
    "caches": {"l2_bytes": 1048576, "l3_bytes": 33554432}})");
  const std::optional<Roofline> r = load_roofline(file);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->l2_bytes, 1048576.0);
  EXPECT_EQ(r->l3_bytes, 33554432.0);
  EXPECT_EQ(*r->by_threads.at(1).read_gbps, 25.5);
  EXPECT_EQ(*r->by_threads.at(1).l2_gbps, 150.25);
  EXPECT_EQ(*r->by_threads.at(1).l3_gbps, 60.0);
  EXPECT_EQ(*r->by_threads.at(1).l3_fit_bytes, 16777216.0);
  EXPECT_FALSE(r->by_threads.at(2).l3_fit_bytes.has_value());
  EXPECT_FALSE(r->by_threads.at(2).read_gbps.has_value());
  EXPECT_EQ(r->memory_level(1, 1e6), "L2");
  EXPECT_EQ(r->memory_level(2, 1e6), "triad");
}

TEST_F(LoadRoofline, ReadsPeaksWithAndWithoutBf16) {
  const fs::path file = write("machine.json", R"({
    "threads": {"1": {"f32_gflops": 80.5, "bf16_gflops": 160.25, "gbps": 20.5},
                "2": {"f32_gflops": 150, "bf16_gflops": null, "gbps": 30},
                "4": {"f32_gflops": 290, "gbps": 31}},
    "cpu_model": "test", "onednn_isa": "avx2", "measured_utc": "2026-11-30T00:00:00Z", "command": "x"})");
  const std::optional<Roofline> r = load_roofline(file);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->by_threads.size(), 3u);
  EXPECT_DOUBLE_EQ(r->by_threads.at(1).gflops, 80.5);
  EXPECT_DOUBLE_EQ(r->by_threads.at(1).gbps, 20.5);
  ASSERT_TRUE(r->by_threads.at(1).bf16_gflops.has_value());
  EXPECT_DOUBLE_EQ(*r->by_threads.at(1).bf16_gflops, 160.25);
  EXPECT_FALSE(r->by_threads.at(2).bf16_gflops.has_value());
  EXPECT_FALSE(r->by_threads.at(4).bf16_gflops.has_value());
  EXPECT_DOUBLE_EQ(r->by_threads.at(4).gflops, 290.0);
}

TEST_F(LoadRoofline, ReadsTheOriginalFormatWithoutProvenance) {
  const fs::path file = write("old.json", R"({"threads": {"1": {"f32_gflops": 10, "gbps": 5}}})");
  const std::optional<Roofline> r = load_roofline(file);
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->by_threads.at(1).gflops, 10.0);
  EXPECT_EQ(r->bound(1, DType::f32, StageCost{1.0, 1.0}), "memory");
}

TEST_F(LoadRoofline, AFileOfAnotherMachineIsNamedWithBoth) {
  const fs::path file = write("zen5.json", R"({"threads": {"1": {"f32_gflops": 10, "gbps": 5}},
    "cpu_model": "AMD EPYC", "cpu_id": "AuthenticAMD family 26 model 2 stepping 0", "cores": 2})");
  const std::optional<Roofline> r = load_roofline(file);
  ASSERT_TRUE(r.has_value());
  const nlohmann::json zen4 = {{"cpu_model", "AMD EPYC"}, {"cpu_id", "AuthenticAMD family 25 model 17 stepping 1"},
                               {"cores", 2}, {"host", "vm"}};
  EXPECT_EQ(roofline_machine_mismatch(*r, file.string(), zen4),
            file.string() + " was measured on AMD EPYC, AuthenticAMD family 26 model 2 stepping 0, 2, this is AMD EPYC, "
                            "AuthenticAMD family 25 model 17 stepping 1, 2: roofline_pct and bound are against another "
                            "machine's roofs; run `attnbench roofline` here");
  nlohmann::json zen5 = zen4;
  zen5["cpu_id"] = "AuthenticAMD family 26 model 2 stepping 0";
  EXPECT_EQ(roofline_machine_mismatch(*r, file.string(), zen5), "");
  zen5["cores"] = 4;
  EXPECT_NE(roofline_machine_mismatch(*r, file.string(), zen5), "");
  // A file without provenance (an older format) is not judged.
  const std::optional<Roofline> old = load_roofline(write("old.json", R"({"threads": {"1": {"f32_gflops": 10, "gbps": 5}}})"));
  EXPECT_EQ(roofline_machine_mismatch(*old, "old.json", zen4), "");
}

TEST_F(LoadRoofline, MissingFileIsNullopt) {
  EXPECT_FALSE(load_roofline(dir_ / "absent.json").has_value());
}

TEST_F(LoadRoofline, GarbageThrowsNamingTheFile) {
  for (const std::string& text : {std::string("not json at all"), std::string(R"({"threads": {"1": {"gbps": 5}}})"),
                                  std::string(R"({"cpu_model": "no threads"})"),
                                  std::string(R"({"threads": {"1": {"f32_gflops": "fast", "gbps": 5}}})")}) {
    const fs::path file = write("bad.json", text);
    try {
      load_roofline(file);
      ADD_FAILURE() << "no exception for " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
  }
}

TEST(RooflineThreads, ParsesListsAndRangesSortedWithoutDuplicates) {
  EXPECT_EQ(parse_roofline_threads("2,1,2"), (std::vector<int>{1, 2}));
  EXPECT_EQ(parse_roofline_threads("1:3"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(parse_roofline_threads("1:8:*2"), (std::vector<int>{1, 2, 4, 8}));
}

TEST(RooflineThreads, BadValuesNameTheFlagAndTheValue) {
  for (const std::string bad : {"0", "-1", "x", "", "1,,2", "2:1", "5000"}) {
    try {
      parse_roofline_threads(bad);
      ADD_FAILURE() << "no exception for '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--threads: bad value '" + bad + "'", 0), 0u) << e.what();
    }
  }
}

bool positive_finite(double x) { return std::isfinite(x) && x > 0; }

TEST(RooflineMeasure, TinyMatmulsGivePositiveFiniteFigures) {
  OneDnnContext ctx(1);
  const MatmulPeak f32 = measure_matmul_peak(ctx, {32, 48}, 2, 0.001);
  EXPECT_TRUE(positive_finite(f32.gflops)) << f32.gflops;
  EXPECT_TRUE(f32.size == 32 || f32.size == 48) << f32.size;
  EXPECT_FALSE(f32.impl.empty());
  if (const auto reason = no_bf16_matmul_reason()) {
    EXPECT_NE(reason->find("bf16"), std::string::npos) << *reason;
  } else {
    OneDnnContext bf16_ctx(1, DType::bf16);
    const MatmulPeak bf16 = measure_matmul_peak(bf16_ctx, {32}, 2, 0.001);
    EXPECT_TRUE(positive_finite(bf16.gflops)) << bf16.gflops;
    EXPECT_EQ(bf16.size, 32);
  }
}

TEST(RooflineMeasure, TinyTriadGivesPositiveFiniteBandwidth) {
  for (const int threads : {1, 2}) {
    const double gbps = measure_stream_gbps(threads, 1 << 14, 2, 0.001);
    EXPECT_TRUE(positive_finite(gbps)) << threads << " threads: " << gbps;
  }
}

// measure_read_gbps throws unless its sum counts every element exactly once, so sizes that
// leave a tail after the four streams of sixteen lanes check the split and the tail.
TEST(RooflineMeasure, ReadOnlySumReadsEveryElementOnce) {
  for (const int threads : {1, 2})
    for (const std::size_t elements : {std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{1000}, std::size_t{4099}})
      EXPECT_TRUE(positive_finite(measure_read_gbps(threads, elements, 1, 0.0001))) << threads << " threads, " << elements;
}

// measure_fork_join_us throws unless every region ran on all its threads.
TEST(RooflineMeasure, ForkAndJoinRunEveryThreadAndTakePositiveTime) {
  for (const int threads : {2, 3}) {
    const double us = measure_fork_join_us(threads, 2, 0.001);
    EXPECT_TRUE(positive_finite(us)) << threads << " threads: " << us;
  }
}

TEST(RooflineMeasure, DefaultTriadArraysExceedTheLastLevelCache) {
  EXPECT_GE(default_stream_elements(), std::size_t{16} << 20);
}

using CacheSizes = TempDir;

TEST_F(CacheSizes, SysfsEntriesGiveTheSizeOfTheirLevel) {
  for (const auto& [index, level, type, size] :
       {std::tuple{"index0", "1", "Data", "48K"}, std::tuple{"index1", "1", "Instruction", "32K"},
        std::tuple{"index2", "2", "Unified", "1024K"}, std::tuple{"index3", "3", "Unified", "32M"}}) {
    fs::create_directories(dir_ / index);
    write(std::string(index) + "/level", level);
    write(std::string(index) + "/type", type);
    write(std::string(index) + "/size", size);
  }
  EXPECT_EQ(cache_bytes_in(dir_, 1), 48u << 10);
  EXPECT_EQ(cache_bytes_in(dir_, 2), 1u << 20);
  EXPECT_EQ(cache_bytes_in(dir_, 3), 32u << 20);
}

TEST_F(CacheSizes, WithoutSysfsEntriesGlibcsFiguresServe) {
  // A VM without /sys/devices/system/cpu/cpu0/cache (an AMD EPYC guest, 2026-12-06).
  const std::pair<int, int> levels[] = {{1, _SC_LEVEL1_DCACHE_SIZE}, {2, _SC_LEVEL2_CACHE_SIZE},
                                        {3, _SC_LEVEL3_CACHE_SIZE}};
  for (const auto& [level, name] : levels) {
    const long conf = sysconf(name);
    EXPECT_EQ(cache_bytes_in(dir_ / "absent", level), conf > 0 ? static_cast<std::size_t>(conf) : 0u) << level;
  }
  EXPECT_EQ(cache_bytes_in(dir_ / "absent", 5), 0u);
}

using RooflineRoundTrip = TempDir;

TEST_F(RooflineRoundTrip, MeasuredJsonLoadsBackUnchanged) {
  RooflineSettings settings;
  settings.matmul_sizes = {32};
  settings.stream_elements = 1 << 14;
  settings.repetitions = 2;
  settings.seconds = 0.001;
  std::vector<ThreadPeaks> peaks;
  for (const int threads : {1, 2}) peaks.push_back(measure_peaks(threads, settings));

  const nlohmann::json doc = roofline_json(peaks, settings, "attnbench roofline --threads 1,2");
  EXPECT_EQ(doc["command"], "attnbench roofline --threads 1,2");
  for (const char* key : {"cpu_model", "cpu_id", "onednn_isa", "measured_utc"}) EXPECT_TRUE(doc[key].is_string()) << key;
  EXPECT_EQ(doc["bf16_reason"].is_null(), peaks[0].bf16.has_value());

  const fs::path file = dir_ / "machine.json";
  write_file_atomically(file, doc.dump(2) + "\n");
  EXPECT_FALSE(fs::exists(dir_ / "machine.json.tmp"));
  const std::optional<Roofline> r = load_roofline(file);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->by_threads.size(), 2u);
  // Measured here, so it describes this machine.
  EXPECT_EQ(roofline_machine_mismatch(*r, file.string(), build_and_machine()), "");
  EXPECT_EQ(r->l2_bytes, static_cast<double>(cache_bytes(2)));
  EXPECT_EQ(r->l3_bytes, static_cast<double>(cache_bytes(3)));
  for (const ThreadPeaks& p : peaks) {
    const Peak& loaded = r->by_threads.at(p.threads);
    EXPECT_TRUE(positive_finite(p.f32.gflops));
    EXPECT_TRUE(positive_finite(p.gbps));
    EXPECT_EQ(loaded.gflops, p.f32.gflops);
    EXPECT_EQ(loaded.gbps, p.gbps);
    ASSERT_TRUE(p.read_gbps.has_value());
    EXPECT_TRUE(positive_finite(*p.read_gbps));
    EXPECT_EQ(loaded.read_gbps, p.read_gbps);
    EXPECT_EQ(loaded.l2_gbps.has_value(), cache_bytes(2) > 0);
    if (cache_bytes(3) == 0) {
      EXPECT_FALSE(loaded.l3_gbps.has_value());
    }
    EXPECT_EQ(loaded.l3_gbps.has_value(), p.l3_fit_bytes.has_value());
    EXPECT_EQ(loaded.l2_gbps, p.l2_gbps);
    EXPECT_EQ(loaded.l3_gbps, p.l3_gbps);
    EXPECT_EQ(loaded.l3_fit_bytes, p.l3_fit_bytes);
    const nlohmann::json& fork_join = doc["threads"][std::to_string(p.threads)]["fork_join_us"];
    if (p.threads == 1) {
      EXPECT_TRUE(fork_join.is_null());
    } else {
      ASSERT_TRUE(p.fork_join_us.has_value());
      EXPECT_TRUE(positive_finite(*p.fork_join_us));
      EXPECT_EQ(fork_join.get<double>(), *p.fork_join_us);
    }
    ASSERT_EQ(loaded.bf16_gflops.has_value(), p.bf16.has_value());
    if (p.bf16) {
      EXPECT_TRUE(positive_finite(p.bf16->gflops));
      EXPECT_EQ(*loaded.bf16_gflops, p.bf16->gflops);
    } else {
      EXPECT_FALSE(p.bf16_reason.empty());
    }
  }
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

TEST(RooflineTable, ARowPerThreadCountWithItsFigures) {
  ThreadPeaks one{1, MatmulPeak{111.54, 1536, "brg"}, MatmulPeak{225.66, 2048, "brg"}, "", 22.31, 1, 27.04, 151.2, 60.55,
                  120.0 * (1 << 20), std::nullopt};
  ThreadPeaks two{2, MatmulPeak{225.04, 2048, "brg"}, std::nullopt, "no bf16", 32.75, 1, std::nullopt,
                  std::nullopt, std::nullopt, std::nullopt, 2.716};
  const std::string table = roofline_table({one, two});
  std::vector<std::string> lines;
  for (std::size_t start = 0, end; (end = table.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(table.substr(start, end - start));
  ASSERT_EQ(lines.size(), 3u) << table;
  EXPECT_EQ(lines[1].rfind("1 ", 0), 0u) << lines[1];
  const std::vector<std::string> first = {"111.5 (n=1536)", "225.7 (n=2048)", "22.3", "27.0", "151.2",
                                          "60.5 (120 MiB)", fixed(111.54 / 22.31, 2), "n/a"};
  for (const std::string& cell : first)
    EXPECT_NE(lines[1].find(cell), std::string::npos) << cell << " in " << lines[1];
  EXPECT_EQ(lines[2].rfind("2 ", 0), 0u) << lines[2];
  const std::vector<std::string> second = {"225.0 (n=2048)", "n/a", "32.8", fixed(225.04 / 32.75, 2), "2.72"};
  for (const std::string& cell : second)
    EXPECT_NE(lines[2].find(cell), std::string::npos) << cell << " in " << lines[2];
}

// The product the roofline times (core's MatmulOp, weights in oneDNN's preferred layout, both
// operands bound, run_bound) is the product: against a double loop, f32 and bf16 (whose inputs
// are rounded to 8 significant bits; where oneDNN has no bf16 matmul, an f32 one on them).
TEST(RooflineMatmul, TimedProductIsTheProduct) {
  const std::int64_t n = 48;
  std::vector<float> a(static_cast<std::size_t>(n * n)), b(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(static_cast<int>(i * 7 % 13) - 6) / 8.f;
    b[i] = static_cast<float>(static_cast<int>(i * 5 % 11) - 5) / 4.f;
  }
  std::vector<double> ref(a.size(), 0.0);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t k = 0; k < n; ++k)
      for (std::int64_t c = 0; c < n; ++c)
        ref[static_cast<std::size_t>(r * n + c)] +=
            double(a[static_cast<std::size_t>(r * n + k)]) * b[static_cast<std::size_t>(k * n + c)];
  for (const DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    OneDnnContext ctx(1, dtype);
    const dnnl::memory::desc square = plain_desc({n, n});
    MatmulOp matmul(ctx, square, square, square, {}, WeightsLayout::preferred);
    matmul.bind_src(a.data());
    matmul.bind_weights(b.data());
    std::vector<float> product(a.size(), std::nanf(""));
    matmul.run_bound(product.data());
    // The inputs are multiples of 1/8 and 1/4 with at most 4 significant bits: exact in bf16
    // too, and every partial sum is exact in f32, so the product is exact.
    for (std::size_t i = 0; i < product.size(); ++i) ASSERT_EQ(product[i], ref[i]) << "element " << i;
    EXPECT_FALSE(matmul.impl_info().empty());
  }
}

}  // namespace
}  // namespace attnbench
