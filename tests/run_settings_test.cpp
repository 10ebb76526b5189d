// A run's settings besides the Problem: the flags that override a scenario's rows, how
// meta.json records them per point (and reads an older run's), and where the peer runs.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "driver/grid_json.hpp"
#include "driver/sweep_plan.hpp"

namespace attnbench {
namespace {

// Two points (src_len 10 and 20) from a block, with the given settings.
Grid two_points(const PointSettings& settings) {
  GridBlock block;
  block.fields = {{"scorer", "dot,general"}, {"src_len", "10,20"}};
  Grid grid = expand({block}, Problem{}, ',');
  for (GridPoint& point : grid) point.settings = settings;
  return grid;
}

PointSettings row_settings() {
  PointSettings s;
  s.name = "row";
  s.bench.stages = {"keys", "step"};
  s.bench.repetitions = 3;
  s.bench.min_time = 0.25;
  s.peer = "torch";
  return s;
}

TEST(SettingFlags, AGivenFlagOverridesEveryRowAndTheOthersStay) {
  Grid grid = two_points(row_settings());
  apply_setting_flags(grid, {{"stages", "decode,score"}, {"repetitions", "9"}});
  for (const GridPoint& point : grid) {
    EXPECT_EQ(point.settings.bench.stages, (std::vector<std::string>{"score", "decode"}));
    EXPECT_EQ(point.settings.bench.repetitions, 9);
    EXPECT_EQ(point.settings.bench.min_time, 0.25);  // not given: the row's
    EXPECT_EQ(point.settings.peer, "torch");
    EXPECT_EQ(point.settings.name, "row");
  }
  apply_setting_flags(grid, {{"min_time", "0.5"}, {"peer", "none"}});
  EXPECT_EQ(grid[1].settings.bench.min_time, 0.5);
  EXPECT_EQ(grid[1].settings.peer, "");
  Grid untouched = two_points(row_settings());
  apply_setting_flags(untouched, {});
  EXPECT_EQ(untouched[0].settings, row_settings());
}

TEST(SettingFlags, ABadFlagNamesTheFlagAndValueEvenWithoutPoints) {
  const std::map<std::string, std::string> bad[] = {{{"stages", "step,bogus"}},
                                                     {{"repetitions", "0"}},
                                                     {{"min_time", "-1"}},
                                                     {{"peer", "jax"}}};
  const std::string expected[] = {
      "--stages: bad value 'step,bogus': unknown stage 'bogus'; known: keys, score, attend, step, cell, output, "
      "encoder, decode, train_step",
      "--repetitions: bad value '0': must be a whole number of at least 1",
      "--min-time: bad value '-1': must be a positive number of seconds",
      "--peer: bad value 'jax': unknown peer; known: torch, none"};
  for (std::size_t i = 0; i < std::size(bad); ++i) {
    Grid empty;
    try {
      apply_setting_flags(empty, bad[i]);
      ADD_FAILURE() << "no error for " << bad[i].begin()->first;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), expected[i]);
    }
  }
}

TEST(GridJson, EveryPointKeepsItsSettings) {
  Grid grid = two_points(row_settings());
  grid[1].settings = PointSettings{};
  const nlohmann::json meta = {{"grid", grid_to_json(grid)}};
  EXPECT_EQ(meta["grid"][0]["name"], "row");
  EXPECT_EQ(meta["grid"][0]["stages"], (nlohmann::json{"keys", "step"}));
  EXPECT_EQ(meta["grid"][0]["peer"], "torch");
  EXPECT_EQ(meta["grid"][1]["peer"], "");
  const Grid back = grid_from_meta(meta);
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].problem.src_len, grid[i].problem.src_len);
    EXPECT_EQ(back[i].scorers, grid[i].scorers);
    EXPECT_EQ(back[i].settings, grid[i].settings) << i;
  }
}

TEST(GridJson, AnOlderRunsPointsTakeTheRunWideSettings) {
  nlohmann::json points = grid_to_json(two_points(PointSettings{}));
  for (nlohmann::json& point : points)
    for (const char* key : {"name", "stages", "repetitions", "min_time_s", "peer"}) point.erase(key);
  const nlohmann::json meta = {{"grid", points},
                               {"stages", {"step"}},
                               {"repetitions", 4},
                               {"min_time_s", 0.125},
                               {"peer", {{"name", "torch"}, {"torch_version", "1.13.0"}}}};
  for (const GridPoint& point : grid_from_meta(meta)) {
    EXPECT_EQ(point.settings.bench.stages, (std::vector<std::string>{"step"}));
    EXPECT_EQ(point.settings.bench.repetitions, 4);
    EXPECT_EQ(point.settings.bench.min_time, 0.125);
    EXPECT_EQ(point.settings.peer, "torch");
    EXPECT_EQ(point.settings.name, "");
  }
  nlohmann::json no_peer = meta;
  no_peer["peer"] = nullptr;
  EXPECT_EQ(grid_from_meta(no_peer).at(0).settings.peer, "");
}

TEST(GridJson, ABadRecordedSettingThrows) {
  nlohmann::json points = grid_to_json(two_points(PointSettings{}));
  points[1]["stages"] = {"step", "bogus"};
  EXPECT_THROW(grid_from_meta({{"grid", points}}), std::invalid_argument);
}

TEST(PeerPoints, ThePeerRunsAtTheFirstPointOfEachProblemThatAsksForIt) {
  PointSettings with_peer;
  with_peer.peer = "torch";
  GridBlock block;
  block.fields = {{"scorer", "dot"}, {"src_len", "10,20"}, {"impl", "onednn,fused"}};
  Grid grid = expand({block}, Problem{}, ',');  // (10, onednn), (10, fused), (20, onednn), (20, fused)
  ASSERT_EQ(grid.size(), 4u);
  grid[1].settings = with_peer;  // src_len 10 asks for the peer at its fused point only
  grid[2].settings = with_peer;
  grid[3].settings = with_peer;
  EXPECT_EQ(peer_points(grid), (std::vector<bool>{false, true, true, false}));
  const std::vector<double> estimates = point_estimates(grid);
  EXPECT_GT(estimates[1], 1.5 * estimates[0]);  // the peer's time is counted where it runs
  EXPECT_DOUBLE_EQ(estimates[3], point_estimates({grid[3]})[0] / 2);
}

TEST(DescribePoint, StartsWithTheRowsName) {
  Grid grid = two_points(row_settings());
  EXPECT_EQ(describe_point(grid[0]).rfind("row: batch 2 src_len 10 ", 0), 0u) << describe_point(grid[0]);
  grid[0].settings.name.clear();
  EXPECT_EQ(describe_point(grid[0]).rfind("batch 2 src_len 10 ", 0), 0u) << describe_point(grid[0]);
}

}  // namespace
}  // namespace attnbench
