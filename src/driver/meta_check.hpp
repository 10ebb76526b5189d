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
void check_run_meta(const nlohmann::json& meta, const std::string& where);

}  // namespace attnbench
