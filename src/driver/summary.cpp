#include "driver/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "driver/csv_io.hpp"
#include "driver/statistics.hpp"

namespace attnbench {

namespace {

// Distinct values of `column` in the order they first appear in `doc`.
std::vector<std::string> values_in(const CsvDocument& doc, std::size_t column) {
  std::vector<std::string> values;
  for (const CsvRow& row : doc.rows)
    if (std::find(values.begin(), values.end(), row.cells[column]) == values.end()) values.push_back(row.cells[column]);
  return values;
}

}  // namespace

std::string summary_table(const std::filesystem::path& run_dir) {
  const CsvDocument timing = read_csv(run_dir / "timing.csv");
  const CsvDocument entropy = read_csv(run_dir / "entropy.csv");
  const std::size_t scorer = *timing.column("scorer"), impl = *timing.column("impl"), stage = *timing.column("stage"),
                    src_len = *timing.column("src_len"), per_step = *timing.column("ns_per_step"),
                    status = *timing.column("status");

  // A row per scorer, or per scorer x impl when the run has several impls (ours, the peer's).
  const bool by_impl = values_in(timing, impl).size() > 1;
  const auto row_name = [&](const CsvRow& row) {
    return by_impl ? row.cells[scorer] + "/" + row.cells[impl] : row.cells[scorer];
  };
  std::vector<std::string> names;
  std::map<std::string, std::map<long, std::vector<double>>> step_ns;  // row name -> src_len -> ns
  std::vector<long> lengths;
  for (const CsvRow& row : timing.rows) {
    if (std::find(names.begin(), names.end(), row_name(row)) == names.end()) names.push_back(row_name(row));
    if (row.cells[stage] != "step" || row.cells[status] != "ok") continue;
    const long length = std::stol(row.cells[src_len]);
    step_ns[row_name(row)][length].push_back(std::stod(row.cells[per_step]));
    if (std::find(lengths.begin(), lengths.end(), length) == lengths.end()) lengths.push_back(length);
  }
  std::sort(lengths.begin(), lengths.end());

  std::map<std::string, std::vector<double>> norm_entropy;
  const std::size_t e_scorer = *entropy.column("scorer"), e_norm = *entropy.column("entropy_norm_mean");
  for (const CsvRow& row : entropy.rows) norm_entropy[row.cells[e_scorer]].push_back(std::stod(row.cells[e_norm]));

  std::string out = "Per-step attention time (stage `step`: score + masked softmax + context), median over the\n"
                    "run's other sizes and thread counts, in microseconds; H/ln L = mean normalized entropy.\n";
  const int name_width = by_impl ? 24 : 16;
  out += fmt::format("{:<{}}", by_impl ? "scorer/impl" : "scorer", name_width);
  for (long length : lengths) out += fmt::format(" {:>12}", fmt::format("L={}", length));
  out += "      H/ln L\n";
  for (const std::string& name : names) {
    out += fmt::format("{:<{}}", name, name_width);
    for (long length : lengths) {
      const auto& samples = step_ns[name][length];
      out += samples.empty() ? fmt::format(" {:>12}", "-") : fmt::format(" {:12.2f}", summarize(samples).median / 1000.0);
    }
    const auto& h = norm_entropy[name.substr(0, name.find('/'))];
    out += h.empty() ? fmt::format(" {:>11}\n", "-") : fmt::format(" {:11.4f}\n", summarize(h).mean);
  }
  return out;
}

}  // namespace attnbench
