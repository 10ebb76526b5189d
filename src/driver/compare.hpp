// `attnbench compare`: median timings of two runs (or of scorers within one run),
// their ratios, a Mann-Whitney test on the raw samples, and geometric means per scorer.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnbench {

// Values of schema::kTimingKey, in that order.
using TimingKey = std::vector<std::string>;

// One `ok` row of timing.csv.
struct TimingEntry {
  TimingKey key;
  double median_ns = 0.0;
};

// The `ok` rows of one run's timing.csv and the raw `ns` samples of its samples.csv.
struct RunTables {
  std::filesystem::path timing_path;
  std::filesystem::path samples_path;               // empty when the run has no samples.csv
  std::vector<TimingEntry> timings;                 // status "ok" only, in file order, keys unique
  std::map<TimingKey, std::vector<double>> samples_ns;  // every repetition's ns, per key
};

// Loads a run from its folder (timing.csv, optional samples.csv) or from a timing.csv
// path (its sibling samples.csv is used if present). Throws std::invalid_argument naming
// the path when it or timing.csv is missing, and CsvError (an invalid_argument) naming
// file:line on a missing column, an unparsable number or a repeated `ok` key.
RunTables load_run(const std::filesystem::path& path);

// One matched measurement. p_value is empty when either side has no samples for the key.
struct CompareRow {
  TimingKey key;  // in baseline mode: the candidate scorer's key
  double old_median_ns = 0.0, new_median_ns = 0.0;
  double ratio = 0.0;  // new / old: 2 means twice as slow
  std::optional<double> p_value;
  bool significant = false;  // p_value < alpha
};

// Geometric mean of the ratios of one scorer's rows.
struct ScorerGeomean {
  std::string scorer;
  std::size_t rows = 0;
  double geomean_ratio = 0.0;
};

struct CompareResult {
  std::string old_label, new_label;  // what was compared, for the table title
  double alpha = 0.05;
  std::vector<CompareRow> rows;            // in the file order of the old (baseline: the) run
  std::vector<ScorerGeomean> geomeans;     // in order of first appearance in rows
  std::size_t only_old = 0, only_new = 0;  // ok rows without a partner
};

// Matches the ok rows of `old_run` and `new_run` on every timing key column.
// Throws std::invalid_argument unless 0 < alpha < 1.
CompareResult compare_runs(const RunTables& old_run, const RunTables& new_run, double alpha = 0.05);

// Within one run, matches the rows whose key `column` (scorer, impl, threads, ...) has
// another value with the rows where it is `baseline` and every other key column agrees
// (old = baseline). Example: compare_to_baseline(run, "impl", "onednn") puts torch against
// onednn. Throws std::invalid_argument naming the value when `baseline` has no ok rows,
// or the column when it is not a key column.
CompareResult compare_to_baseline(const RunTables& run, std::string_view column, std::string_view baseline,
                                  double alpha = 0.05);

// Renders an aligned text table for a terminal: key columns that are the same in every
// row are printed once above it; then one geomean line per scorer.
std::string format_table(const CompareResult& result);

// Renders the rows as CSV: the key columns, old_median_ns, new_median_ns, ratio, p_value,
// significant ("true"/"false", blank with p_value when untested); numbers with "%.9g".
std::string format_csv(const CompareResult& result);

// Renders the geometric means as CSV: scorer, rows, geomean_ratio.
std::string format_geomean_csv(const CompareResult& result);

}  // namespace attnbench
