#include "driver/summary.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "driver/csv_io.hpp"
#include "driver/statistics.hpp"

namespace attnbench {

namespace {

// Scorer names in the order they first appear in `doc`.
std::vector<std::string> scorers_in(const CsvDocument& doc, std::size_t column) {
  std::vector<std::string> names;
  for (const CsvRow& row : doc.rows)
    if (std::find(names.begin(), names.end(), row.cells[column]) == names.end()) names.push_back(row.cells[column]);
  return names;
}

}  // namespace

std::string summary_table(const std::filesystem::path& run_dir) {
  const CsvDocument timing = read_csv(run_dir / "timing.csv");
  const CsvDocument entropy = read_csv(run_dir / "entropy.csv");
  const std::size_t scorer = *timing.column("scorer"), stage = *timing.column("stage"),
                    src_len = *timing.column("src_len"), per_step = *timing.column("ns_per_step"),
                    status = *timing.column("status");

  std::map<std::string, std::map<long, std::vector<double>>> step_ns;  // scorer -> src_len -> ns
  std::vector<long> lengths;
  for (const CsvRow& row : timing.rows) {
    if (row.cells[stage] != "step" || row.cells[status] != "ok") continue;
    const long length = std::stol(row.cells[src_len]);
    step_ns[row.cells[scorer]][length].push_back(std::stod(row.cells[per_step]));
    if (std::find(lengths.begin(), lengths.end(), length) == lengths.end()) lengths.push_back(length);
  }
  std::sort(lengths.begin(), lengths.end());

  std::map<std::string, std::vector<double>> norm_entropy;
  const std::size_t e_scorer = *entropy.column("scorer"), e_norm = *entropy.column("entropy_norm_mean");
  for (const CsvRow& row : entropy.rows) norm_entropy[row.cells[e_scorer]].push_back(std::stod(row.cells[e_norm]));

  std::string out = "Per-step attention time (stage `step`: score + masked softmax + context), median over the\n"
                    "run's other sizes and thread counts, in microseconds; H/ln L = mean normalized entropy.\n";
  char cell[64];
  std::snprintf(cell, sizeof cell, "%-16s", "scorer");
  out += cell;
  for (long length : lengths) {
    std::snprintf(cell, sizeof cell, " %12s", ("L=" + std::to_string(length)).c_str());
    out += cell;
  }
  out += "      H/ln L\n";
  for (const std::string& name : scorers_in(timing, scorer)) {
    std::snprintf(cell, sizeof cell, "%-16s", name.c_str());
    out += cell;
    for (long length : lengths) {
      const auto& samples = step_ns[name][length];
      if (samples.empty())
        std::snprintf(cell, sizeof cell, " %12s", "-");
      else
        std::snprintf(cell, sizeof cell, " %12.2f", summarize(samples).median / 1000.0);
      out += cell;
    }
    const auto& h = norm_entropy[name];
    if (h.empty())
      std::snprintf(cell, sizeof cell, " %11s\n", "-");
    else
      std::snprintf(cell, sizeof cell, " %11.4f\n", summarize(h).mean);
    out += cell;
  }
  return out;
}

}  // namespace attnbench
