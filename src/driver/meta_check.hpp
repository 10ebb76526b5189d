// meta.json checked field by field before a run is resumed or merged: every field a reader
// uses has its type and range, so that a hostile or damaged file gives one line, never an
// abort or a raw JSON exception.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace attnbench {

// Throws std::invalid_argument "<where>: field 'F': <reason>, got <value>" for the first
// field of `meta` (a run's meta.json as parsed) that is missing or wrong, e.g.
// "DIR/meta.json: field 'repetitions': must be a whole number from 1 to 100000, got 0",
// or "DIR/meta.json: field 'grid[2].scorers': must be a non-empty list of names, got 5".
// A train run's ("kind": "train") grid is a list of trainings, each with every key column
// of train.csv and its settings (train_rows.hpp) as text: e.g. "DIR/meta.json: field
// 'grid[0].steps': must be a whole number from 1 to 2147483647, got \"0\"". Also checked:
// kind, shard, points, scenario_files, a merged run's allow_mixed, missing_shards and
// merged_from, and the "slurm" entry of a run from `attnbench submit`.
void check_run_meta(const nlohmann::json& meta, const std::string& where);

// The meta.json of a run made by `attnbench submit` (status, and the "slurm" entry with its
// shards count and submissions), as `status` and `submit --resume` read it; same messages,
// e.g. "DIR/meta.json: field 'slurm.shards': must be a whole number from 1 to 1000000, got 0".
void check_slurm_run_meta(const nlohmann::json& meta, const std::string& where);

// The "slurm" entry alone (merge keeps it from an existing --out/meta.json).
void check_slurm_entry(const nlohmann::json& slurm, const std::string& where);

}  // namespace attnbench
