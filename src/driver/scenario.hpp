// Sweep definitions stored as CSV files (scenarios/*.csv): complete descriptions of a run.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include "core/problem.hpp"
#include "driver/grid.hpp"

namespace attnbench {

struct Scenario {
  Grid grid;                                  // every point, each with its row's settings
  std::vector<std::filesystem::path> files;   // the file, then each file it includes, once, as read
};

// Loads a scenario: a CSV file whose header names columns and whose every row is one
// GridBlock with its settings. Columns:
//   Problem fields (problem_fields()): a value, a ';' list or a range ("10:100:10",
//     "16:1024:*2"); an empty cell keeps the default;
//   settings (setting_names()): `name` (a label: letters, digits, '_', '-', '.'),
//     `stages` (a ';' list), `repetitions`, `min_time` (seconds), `peer` (torch or none);
//     an empty cell keeps the default (no name, every stage, 5, 0.05, none);
//   `include`: a CSV file (relative to this one) whose rows are read in place of this
//     row; this row's other non-empty cells replace those cells in every included row
//     (an outer include row's cells win over an inner one's).
// Lines starting with '#' are comments. Two rows that yield the same Problem share one
// point (the union of their scorers) and must have the same settings. Example file:
//   # src_len sweep, then the lesson's sizes from another file with 10 repetitions
//   name,scorer,src_len,threads,stages,include,repetitions
//   long,all,10;50;100,1,step;decode,,
//   ,,,,,lesson.csv,10
// Throws CsvError (std::invalid_argument) with one line naming the file and line where the
// bad text is written:
//   "file:line: unknown column 'x'; known: ..." for a header cell that is no column,
//   "file:line: column 'x': bad value 'y': <reason>" for a bad cell, point or include,
//   "file:line: the point <sizes> is also in file:line with other settings (<which>)",
// or read_csv()'s "file:line: ..." for malformed CSV.
Scenario load_scenario(const std::filesystem::path& file, const Problem& defaults);

// Finds a scenario: an existing file path as is; otherwise a name in scenarios_dir
// ("default" -> scenarios_dir/default.csv). Throws std::invalid_argument listing the
// available names when neither exists.
std::filesystem::path resolve_scenario(std::string_view name_or_path, const std::filesystem::path& scenarios_dir);

}  // namespace attnbench
