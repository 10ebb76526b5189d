// Sweep definitions stored as CSV files (scenarios/*.csv).
#pragma once

#include <filesystem>
#include <string_view>

#include "core/problem.hpp"
#include "driver/grid.hpp"

namespace attnbench {

// Loads a scenario: a CSV file whose header names Problem fields (problem_fields())
// and whose every row is one GridBlock. A cell is a value, a ';' list or a range
// ("10:100:10", "16:1024:*2"); an empty cell keeps the default. Lines starting with
// '#' are comments. Example file:
//   # src_len sweep
//   scorer,src_len,threads
//   all,10;50;100,1
// Throws CsvError (std::invalid_argument) with one line:
//   "file:line: unknown column 'x'; known: ..." for a header cell that is no field,
//   "file:line: column 'x': bad value 'y': <reason>" for a bad cell or point,
// or read_csv()'s "file:line: ..." for malformed CSV.
Grid load_scenario(const std::filesystem::path& file, const Problem& defaults);

// Finds a scenario: an existing file path as is; otherwise a name in scenarios_dir
// ("default" -> scenarios_dir/default.csv). Throws std::invalid_argument listing the
// available names when neither exists.
std::filesystem::path resolve_scenario(std::string_view name_or_path, const std::filesystem::path& scenarios_dir);

}  // namespace attnbench
