// `attnbench merge`: joins shard run folders into one run folder.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

// Checks that every folder comes from the same scenario (same scenario files and
// sha256, same grid) and the same build (git commit, oneDNN version, compiler), then
// writes `out` with the union of their rows (a row whose key appears twice is kept
// once) and a meta.json that lists the shards; its status is "incomplete" when a shard
// was interrupted or missing ("missing_shards"). Throws std::invalid_argument naming
// the folder and the field that differs. Shards measured on different CPU models or
// oneDNN versions are refused unless allow_mixed; then every row of the merged CSVs
// ends with a `host` column naming the machine that measured it. An existing
// out/meta.json's "slurm" entry (from `attnbench submit`) is kept in the merged one.
// Returns the meta.json it wrote.
// The file whose rows count a run folder's finished points: train_final.csv for a train run
// (meta.json "kind": "train"), else timing.csv.
std::string finished_rows_file(const std::string& kind);

nlohmann::json merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out,
                bool allow_mixed = false);

}  // namespace attnbench
