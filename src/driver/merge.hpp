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
// oneDNN versions, or with other fused loops or fused bf16 query (ATTNBENCH_FUSED_LOOPS,
// ATTNBENCH_FUSED_BF16_QUERY), are refused unless allow_mixed; then every row of the
// merged CSVs ends with a `host` column naming the machine that measured it, and each
// shard's entry in meta.json's merged_from names its CPU and those two settings. An existing
// out/meta.json's "slurm" entry (from `attnbench submit`) is kept in the merged one.
// Reads only the rows each shard's journal commits; holds out's FolderLock while it writes
// (another writer there: std::invalid_argument "OUT: another attnbench is writing ...")
// and writes a journal committing the merged files (run_journal.hpp).
// Both kinds of folder (folder_kind.hpp) merge the same way: the kind's data files, then the
// journal, then meta.json. Returns the meta.json it wrote.
nlohmann::json merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out,
                bool allow_mixed = false);

}  // namespace attnbench
