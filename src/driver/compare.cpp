#include "driver/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <set>
#include <stdexcept>

#include "driver/csv_io.hpp"
#include "driver/schema.hpp"
#include "driver/statistics.hpp"

namespace attnbench {

namespace {

// Returns `name` if `columns` holds it; in a constant expression a missing name does not compile.
template <std::size_t N>
consteval std::string_view schema_column(const std::array<std::string_view, N>& columns, std::string_view name) {
  for (std::string_view c : columns)
    if (c == name) return c;
  throw "column is not in the schema";
}

constexpr std::string_view kMedianColumn = schema_column(schema::kTimingValues, "median_ns");
constexpr std::string_view kStatusColumn = schema_column(schema::kTimingValues, "status");
constexpr std::string_view kSamplesColumn = schema_column(schema::kSampleValues, "ns");
constexpr std::string_view kScorerColumn = schema_column(schema::kTimingKey, "scorer");
constexpr std::string_view kStatusOk = "ok";

// Value columns of compare's own CSV, after the key columns.
constexpr std::array<std::string_view, 5> kCompareValues = {"old_median_ns", "new_median_ns", "ratio", "p_value",
                                                            "significant"};
constexpr std::array<std::string_view, 3> kGeomeanColumns = {"scorer", "rows", "geomean_ratio"};

constexpr std::size_t scorer_index() {
  for (std::size_t i = 0; i < schema::kTimingKey.size(); ++i)
    if (schema::kTimingKey[i] == kScorerColumn) return i;
  return schema::kTimingKey.size();
}
constexpr std::size_t kScorerIndex = scorer_index();

std::size_t require_column(const CsvDocument& doc, std::string_view name) {
  if (const auto index = doc.column(name)) return *index;
  throw CsvError(doc.where(doc.header_line) + ": missing column '" + std::string(name) + "'");
}

std::vector<std::size_t> key_columns(const CsvDocument& doc) {
  std::vector<std::size_t> columns;
  for (std::string_view name : schema::kTimingKey) columns.push_back(require_column(doc, name));
  return columns;
}

// A run merged with --allow-mixed names each row's host; rows of several machines
// would be matched on their key alone, so such a file is refused.
void refuse_mixed_hosts(const CsvDocument& doc) {
  const auto host = doc.column("host");
  if (!host) return;
  std::set<std::string> hosts;
  for (const CsvRow& row : doc.rows) hosts.insert(row.cells[*host]);
  if (hosts.size() > 1)
    throw std::invalid_argument(doc.path.string() + ": rows measured on " + std::to_string(hosts.size()) +
                                " hosts (" + *hosts.begin() + ", " + *std::next(hosts.begin()) +
                                (hosts.size() > 2 ? ", ..." : "") +
                                "; merged with --allow-mixed): compare would mix machines; split it by its host column");
}

TimingKey key_of(const CsvRow& row, const std::vector<std::size_t>& columns) {
  TimingKey key;
  for (std::size_t c : columns) key.push_back(row.cells[c]);
  return key;
}

double parse_number(const CsvDocument& doc, const CsvRow& row, std::size_t column) {
  const std::string& cell = row.cells[column];
  char* end = nullptr;
  const double value = std::strtod(cell.c_str(), &end);
  if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(value))
    throw CsvError(doc.where(row.line) + ": column '" + doc.header[column] + "': not a finite number '" + cell + "'");
  return value;
}

std::string number(double x) { return fmt::format("{:.9g}", x); }

// "12.3 us": a duration in ns with a unit that keeps 3-4 significant digits.
std::string duration(double ns) {
  if (ns < 1e3) return fmt::format("{:.1f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.3f} s", ns / 1e9);
}

std::optional<double> p_value(const RunTables& old_run, const TimingKey& old_key, const RunTables& new_run,
                              const TimingKey& new_key) {
  const auto a = old_run.samples_ns.find(old_key);
  const auto b = new_run.samples_ns.find(new_key);
  if (a == old_run.samples_ns.end() || b == new_run.samples_ns.end()) return std::nullopt;
  return mann_whitney_p(a->second, b->second);
}

CompareRow make_row(const TimingKey& key, double old_ns, double new_ns, std::optional<double> p, double alpha) {
  return {key, old_ns, new_ns, new_ns / old_ns, p, p.has_value() && *p < alpha};
}

void check_alpha(double alpha) {
  if (!(alpha > 0.0 && alpha < 1.0))
    throw std::invalid_argument("alpha " + number(alpha) + ": must be between 0 and 1 (exclusive)");
}

void add_geomeans(CompareResult& result) {
  std::vector<std::string> scorers;
  for (const CompareRow& row : result.rows)
    if (std::find(scorers.begin(), scorers.end(), row.key[kScorerIndex]) == scorers.end())
      scorers.push_back(row.key[kScorerIndex]);
  for (const std::string& scorer : scorers) {
    std::vector<double> ratios;
    for (const CompareRow& row : result.rows)
      if (row.key[kScorerIndex] == scorer) ratios.push_back(row.ratio);
    result.geomeans.push_back({scorer, ratios.size(), geometric_mean(ratios)});
  }
}

}  // namespace

RunTables load_run(const std::filesystem::path& path) {
  RunTables run;
  if (!std::filesystem::exists(path)) throw std::invalid_argument(path.string() + ": no such file or directory");
  std::filesystem::path samples;
  if (std::filesystem::is_directory(path)) {
    run.timing_path = path / "timing.csv";
    if (!std::filesystem::exists(run.timing_path))
      throw std::invalid_argument(run.timing_path.string() + ": no such file (expected a run folder with timing.csv)");
    samples = path / "samples.csv";
  } else {
    run.timing_path = path;
    samples = path.parent_path() / "samples.csv";
  }

  const CsvDocument timing = read_csv(run.timing_path);
  refuse_mixed_hosts(timing);
  const std::vector<std::size_t> keys = key_columns(timing);
  const std::size_t median = require_column(timing, kMedianColumn);
  const std::size_t status = require_column(timing, kStatusColumn);
  std::map<TimingKey, std::size_t> seen;  // key -> line
  for (const CsvRow& row : timing.rows) {
    if (row.cells[status] != kStatusOk) continue;
    TimingKey key = key_of(row, keys);
    const auto [it, inserted] = seen.emplace(key, row.line);
    if (!inserted)
      throw CsvError(timing.where(row.line) + ": repeats the key of line " + std::to_string(it->second));
    run.timings.push_back({std::move(key), parse_number(timing, row, median)});
  }

  if (std::filesystem::is_regular_file(samples)) {
    run.samples_path = samples;
    const CsvDocument doc = read_csv(samples);
    const std::vector<std::size_t> sample_keys = key_columns(doc);
    const std::size_t ns = require_column(doc, kSamplesColumn);
    for (const CsvRow& row : doc.rows) run.samples_ns[key_of(row, sample_keys)].push_back(parse_number(doc, row, ns));
  }
  return run;
}

CompareResult compare_runs(const RunTables& old_run, const RunTables& new_run, double alpha) {
  check_alpha(alpha);
  CompareResult result;
  result.old_label = old_run.timing_path.string();
  result.new_label = new_run.timing_path.string();
  result.alpha = alpha;
  std::map<TimingKey, double> new_median;
  for (const TimingEntry& e : new_run.timings) new_median.emplace(e.key, e.median_ns);
  for (const TimingEntry& e : old_run.timings) {
    const auto match = new_median.find(e.key);
    if (match == new_median.end()) {
      ++result.only_old;
      continue;
    }
    result.rows.push_back(make_row(e.key, e.median_ns, match->second, p_value(old_run, e.key, new_run, e.key), alpha));
  }
  result.only_new = new_run.timings.size() - result.rows.size();
  add_geomeans(result);
  return result;
}

CompareResult compare_to_baseline(const RunTables& run, std::string_view column, std::string_view baseline,
                                  double alpha) {
  check_alpha(alpha);
  const auto found = std::find(schema::kTimingKey.begin(), schema::kTimingKey.end(), column);
  if (found == schema::kTimingKey.end() || column == "stage")
    throw std::invalid_argument("--baseline " + std::string(column) + "=" + std::string(baseline) +
                                ": not a key column to compare along (e.g. scorer, impl, threads, dtype)");
  const auto index = static_cast<std::size_t>(found - schema::kTimingKey.begin());
  // The baseline's rows, by their key with the compared column blanked.
  const auto without_column = [index](TimingKey key) {
    key[index].clear();
    return key;
  };
  std::map<TimingKey, const TimingEntry*> base;
  std::vector<std::string> values;
  for (const TimingEntry& e : run.timings) {
    if (e.key[index] == baseline) base.emplace(without_column(e.key), &e);
    if (std::find(values.begin(), values.end(), e.key[index]) == values.end()) values.push_back(e.key[index]);
  }
  if (base.empty()) {
    const std::string known = values.empty() ? "none" : fmt::format("{}", fmt::join(values, ", "));
    throw std::invalid_argument(fmt::format("--baseline {}: no ok rows with {} {} in {} ({}: {})", baseline, column,
                                            baseline, run.timing_path.string(), column, known));
  }

  CompareResult result;
  result.old_label = std::string(column) + " " + std::string(baseline) + " in " + run.timing_path.string();
  result.new_label = "the other " + std::string(column) + " values";
  result.alpha = alpha;
  std::map<TimingKey, bool> base_used;
  for (const TimingEntry& e : run.timings) {
    if (e.key[index] == baseline) continue;
    const auto match = base.find(without_column(e.key));
    if (match == base.end()) {
      ++result.only_new;
      continue;
    }
    const TimingEntry& b = *match->second;
    base_used[b.key] = true;
    result.rows.push_back(make_row(e.key, b.median_ns, e.median_ns, p_value(run, b.key, run, e.key), alpha));
  }
  result.only_old = base.size() - base_used.size();
  add_geomeans(result);
  return result;
}

std::string format_table(const CompareResult& result) {
  std::string out = "OLD: " + result.old_label + "\nNEW: " + result.new_label + "\n";
  if (result.rows.empty()) {
    out += "no matching ok rows\n";
  } else {
    // Key columns that vary, plus scorer and stage; the constant ones go on one line.
    std::vector<std::size_t> shown;
    std::string fixed;
    for (std::size_t c = 0; c < schema::kTimingKey.size(); ++c) {
      const bool varies = std::any_of(result.rows.begin(), result.rows.end(),
                                      [&](const CompareRow& r) { return r.key[c] != result.rows.front().key[c]; });
      if (varies || c == kScorerIndex || schema::kTimingKey[c] == "stage")
        shown.push_back(c);
      else
        fixed += " " + std::string(schema::kTimingKey[c]) + "=" + result.rows.front().key[c];
    }
    if (!fixed.empty()) out += "same in every row:" + fixed + "\n";

    std::vector<std::vector<std::string>> cells;
    std::vector<std::string> header;
    for (std::size_t c : shown) header.emplace_back(schema::kTimingKey[c]);
    for (const char* name : {"old median", "new median", "new/old", "p", "significant"}) header.emplace_back(name);
    cells.push_back(header);
    for (const CompareRow& row : result.rows) {
      std::vector<std::string> line;
      for (std::size_t c : shown) line.push_back(row.key[c]);
      line.push_back(duration(row.old_median_ns));
      line.push_back(duration(row.new_median_ns));
      line.push_back(fmt::format("{:.3f}", row.ratio));
      line.push_back(row.p_value ? fmt::format("{:.3g}", *row.p_value) : "-");
      line.push_back(!row.p_value ? "-" : row.significant ? "yes" : "no");
      cells.push_back(line);
    }
    std::vector<std::size_t> width(header.size(), 0);
    for (const auto& line : cells)
      for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
    for (const auto& line : cells) {
      std::string text;
      for (std::size_t i = 0; i < line.size(); ++i) {
        const std::string pad(width[i] - line[i].size(), ' ');
        const bool left = i < shown.size();  // keys left-aligned, numbers right-aligned
        text += (i ? "  " : "") + (left ? line[i] + pad : pad + line[i]);
      }
      text.erase(text.find_last_not_of(' ') + 1);
      out += text + "\n";
    }
  }
  for (const ScorerGeomean& g : result.geomeans)
    out += "geomean new/old " + g.scorer + ": " + fmt::format("{:.3f}", g.geomean_ratio) + " over " +
           std::to_string(g.rows) + (g.rows == 1 ? " row" : " rows") + "\n";
  if (result.only_old || result.only_new)
    out += "unmatched ok rows: " + std::to_string(result.only_old) + " only in OLD, " +
           std::to_string(result.only_new) + " only in NEW\n";
  out += "significant: Mann-Whitney U two-sided p < " + fmt::format("{:g}", result.alpha) + "\n";
  return out;
}

std::string format_csv(const CompareResult& result) {
  std::vector<std::string> header(schema::kTimingKey.begin(), schema::kTimingKey.end());
  header.insert(header.end(), kCompareValues.begin(), kCompareValues.end());
  std::string out = csv_line(header);
  for (const CompareRow& row : result.rows) {
    std::vector<std::string> cells = row.key;
    cells.push_back(number(row.old_median_ns));
    cells.push_back(number(row.new_median_ns));
    cells.push_back(number(row.ratio));
    cells.push_back(row.p_value ? number(*row.p_value) : "");
    cells.push_back(!row.p_value ? "" : row.significant ? "true" : "false");
    out += csv_line(cells);
  }
  return out;
}

std::string format_geomean_csv(const CompareResult& result) {
  std::string out = csv_line({kGeomeanColumns.begin(), kGeomeanColumns.end()});
  for (const ScorerGeomean& g : result.geomeans)
    out += csv_line({g.scorer, std::to_string(g.rows), number(g.geomean_ratio)});
  return out;
}

}  // namespace attnbench
