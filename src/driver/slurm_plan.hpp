// What a sharded sweep asks Slurm for, and the two sbatch scripts that run it: a job
// array whose task K runs shard K/N, and a merge job that waits for it (afterok).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "driver/grid.hpp"
#include "driver/point_bench.hpp"

namespace attnbench {

// One shard's share of a sweep, from the --dry-run estimates.
struct ShardNeeds {
  std::size_t points = 0;
  std::uint64_t memory_bytes = 0;  // the largest point that fits max_memory (others get skipped rows)
  double seconds = 0;              // the sum of its points' estimates
  int threads = 1;                 // the largest thread count of its points
};

// The needs of shards 1..count of `grid` (shard_of's split), from each point's own
// settings; a point where the peer runs counts twice, as --dry-run does.
std::vector<ShardNeeds> shard_needs(const Grid& grid, std::uint64_t max_memory, int count);

// What every task of the array asks for: the largest shard's needs with a margin.
struct SlurmResources {
  int cpus_per_task = 1;        // the grid's largest thread count
  std::uint64_t mem_mib = 0;    // 1.25 x the largest point + 512 MiB for the process
  int time_minutes = 0;         // 3 x the slowest shard's estimate + 10 minutes
};
SlurmResources resources_for(const std::vector<ShardNeeds>& shards);

// Everything the two scripts say. Paths are absolute.
struct SlurmScripts {
  std::filesystem::path run_dir;              // DIR: shards in DIR/shards/K, logs in DIR/slurm/logs
  std::filesystem::path attnbench;            // the binary the nodes run
  std::string sweep_command = "run";          // the subcommand each task runs ("run", later "train")
  std::vector<std::string> sweep_args;        // its flags, without --shard/--out/--resume
  int shards = 1;
  SlurmResources resources;
  std::string time;                           // --time as given; empty: resources.time_minutes
  std::string partition, account, job_name;
  std::vector<std::string> sbatch_args;       // extra #SBATCH lines, e.g. "--qos=low"
  bool allow_mixed = false;                   // the merge job passes --allow-mixed
};

// The array script: task K runs `attnbench <sweep> ARGS --shard K/N --out DIR/shards/K`,
// or `attnbench <sweep> --resume DIR/shards/K` when that folder already holds a run.
// The array range is given to sbatch (--array), not written here.
std::string shard_script(const SlurmScripts& s);

// The merge script: `attnbench merge DIR/shards/1 .. DIR/shards/N --out DIR`.
std::string merge_script(const SlurmScripts& s);

// A word quoted for bash when it needs it: "a b" -> "'a b'".
std::string shell_quote(const std::string& word);

// The folder of shard K of the run in `run_dir`.
std::filesystem::path shard_dir(const std::filesystem::path& run_dir, int k);

}  // namespace attnbench
