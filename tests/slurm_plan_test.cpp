// What `attnbench submit` asks Slurm for, and the scripts it writes (driver/slurm_plan).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "driver/estimate.hpp"
#include "driver/slurm_plan.hpp"

namespace attnbench {
namespace {

GridPoint point(std::int64_t src_len, int threads) {
  GridPoint p;
  p.problem.src_len = src_len;
  p.problem.threads = threads;
  p.scorers = {"additive", "dot"};
  p.problem.scorer = "additive";
  return p;
}

TEST(ShardNeeds, SplitsLikeShardOfAndSumsEachShardsPoints) {
  const Grid grid = {point(10, 1), point(20, 2), point(30, 1), point(40, 1), point(50, 1)};
  const BenchSettings bench = grid[0].settings.bench;
  const std::vector<ShardNeeds> needs = shard_needs(grid, UINT64_MAX, 2);
  ASSERT_EQ(needs.size(), 2u);
  EXPECT_EQ(needs[0].points, 3u);  // points 1, 3, 5
  EXPECT_EQ(needs[1].points, 2u);  // points 2, 4
  EXPECT_EQ(needs[0].threads, 1);
  EXPECT_EQ(needs[1].threads, 2);
  EXPECT_DOUBLE_EQ(needs[0].seconds,
                   point_seconds(grid[0], bench) + point_seconds(grid[2], bench) + point_seconds(grid[4], bench));
  EXPECT_EQ(needs[0].memory_bytes, point_memory_bytes(grid[4]));
  Grid peer_grid = grid;  // every point of a distinct problem: the peer measures each once
  for (GridPoint& p : peer_grid) p.settings.peer = "torch";
  const std::vector<ShardNeeds> with_peer = shard_needs(peer_grid, UINT64_MAX, 2);
  EXPECT_DOUBLE_EQ(with_peer[1].seconds, 2 * needs[1].seconds);
}

TEST(ShardNeeds, PointsOverMaxMemoryCostNoMemoryAndNoTime) {
  const Grid grid = {point(10, 1), point(500, 1)};
  const std::uint64_t limit = point_memory_bytes(grid[0]);
  ASSERT_GT(point_memory_bytes(grid[1]), limit);
  const ShardNeeds needs = shard_needs(grid, limit, 1).front();
  EXPECT_EQ(needs.points, 2u);
  EXPECT_EQ(needs.memory_bytes, limit);
  EXPECT_DOUBLE_EQ(needs.seconds, point_seconds(grid[0], grid[0].settings.bench));
}

TEST(SlurmResources, TakesTheLargestShardWithItsMargins) {
  const std::vector<ShardNeeds> shards = {{3, 100ull << 20, 30.0, 1}, {2, 400ull << 20, 125.0, 4}};
  const SlurmResources r = resources_for(shards);
  EXPECT_EQ(r.cpus_per_task, 4);
  EXPECT_EQ(r.mem_mib, 400u * 5 / 4 + 512);             // 1.25 x 400 MiB + 512 MiB
  EXPECT_EQ(r.time_minutes, 7 + 10);                      // ceil(3 x 125 s / 60) + 10
}

TEST(ShellQuote, LeavesPlainWordsAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("--src-len=10:100:*2"), "--src-len=10:100:*2");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
}

SlurmScripts scripts() {
  SlurmScripts s;
  s.run_dir = "/runs/r 1";
  s.attnbench = "/opt/attnbench";
  s.sweep_args = {"--scorer", "dot,general", "--scenario", "my file.csv"};
  s.shards = 3;
  s.resources = {2, 1536, 40};
  s.partition = "cpu";
  s.job_name = "attnbench-x";
  s.sbatch_args = {"--qos=low"};
  return s;
}

TEST(ShardScript, RunsShardKOfNWithTheResourcesAndResumesAnExistingFolder) {
  const std::string text = shard_script(scripts());
  for (const char* line : {"#SBATCH --cpus-per-task=2\n", "#SBATCH --mem=1536M\n", "#SBATCH --time=40\n",
                           "#SBATCH --partition=cpu\n", "#SBATCH --qos=low\n",
                           "#SBATCH --output=\"/runs/r 1/slurm/logs/shard-%a-%A.out\"\n",
                           "export OMP_NUM_THREADS=\"${SLURM_CPUS_PER_TASK:-2}\" OMP_PROC_BIND=close OMP_PLACES=cores\n",
                           "SHARD='/runs/r 1'/shards/\"$K\"\n",
                           "  exec /opt/attnbench run --resume \"$SHARD\" --quiet\n",
                           "exec /opt/attnbench run --scorer dot,general --scenario 'my file.csv' --shard \"$K/3\" "
                           "--out \"$SHARD\" --quiet\n"})
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  SlurmScripts given = scripts();
  given.time = "2:00:00";
  EXPECT_NE(shard_script(given).find("#SBATCH --time=2:00:00\n"), std::string::npos);
}

TEST(MergeScript, MergesEveryShardIntoTheRunFolder) {
  SlurmScripts s = scripts();
  s.allow_mixed = true;
  const std::string text = merge_script(s);
  EXPECT_NE(text.find("exec /opt/attnbench merge '/runs/r 1/shards/1' '/runs/r 1/shards/2' '/runs/r 1/shards/3' "
                      "--out '/runs/r 1' --allow-mixed\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#SBATCH --partition=cpu\n"), std::string::npos);
}

}  // namespace
}  // namespace attnbench
