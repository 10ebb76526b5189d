// Where the shards of a submitted run stand: Slurm's word where it answers, the shard
// folders' meta.json otherwise.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/slurm_client.hpp"

namespace attnbench {

enum class ShardVerdict { done, running, pending, failed };
const char* to_string(ShardVerdict verdict);

struct ShardState {
  int index = 0;                       // K of K/N
  ShardVerdict verdict = ShardVerdict::pending;
  std::string job;                     // "12_3": the array task of its latest submission, empty if never submitted
  std::string slurm_state, slurm_reason;  // empty when Slurm does not know the task (any more)
  std::string folder_status;           // the shard's meta.json status; "missing" without a folder
  std::size_t rows = 0;                // data rows in its timing.csv
  std::filesystem::path log;           // its Slurm output file of the latest submission
};

struct MergeState {
  std::string job, slurm_state, slurm_reason;
  std::filesystem::path log;
};

struct RunState {
  std::filesystem::path dir;
  nlohmann::json meta;                 // DIR/meta.json
  int shard_count = 0;
  bool slurm_answered = false;         // false: verdicts come from the folders alone
  std::vector<ShardState> shards;
  MergeState merge;
  std::size_t count(ShardVerdict verdict) const;
};

// Reads DIR/meta.json of a run made by `attnbench submit` (throws std::invalid_argument
// naming the file when it is missing or was not submitted), asks Slurm about its jobs
// and reads every shard folder. A shard is done when its folder's run is complete,
// pending or running while Slurm says so, failed otherwise (or, when Slurm does not
// answer, by its folder: running, or pending while it has none).
RunState read_run_state(const std::filesystem::path& dir);

// The last `lines` lines of a text file; empty when it cannot be read.
std::vector<std::string> tail_lines(const std::filesystem::path& file, std::size_t lines);

// Replaces DIR/meta.json with `meta` (atomically).
void write_run_meta(const std::filesystem::path& dir, const nlohmann::json& meta);

}  // namespace attnbench
