#include "driver/scenario.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "driver/csv_io.hpp"
#include "driver/sweep_plan.hpp"

namespace attnbench {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kInclude = "include";

std::string trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(" \t\r") - first + 1));
}

// A non-empty cell: its text and where it is written ("file:line").
struct Cell {
  std::string column, text, where;
};

// One row to expand: its cells in column order (an include row's replacements last) and where it is.
struct Row {
  std::string where;
  std::vector<Cell> cells;
};

// `cells` with each of `replacements` put in place of the cell of its column, or appended.
std::vector<Cell> replaced(std::vector<Cell> cells, const std::vector<Cell>& replacements) {
  for (const Cell& r : replacements) {
    const auto at = std::find_if(cells.begin(), cells.end(), [&](const Cell& c) { return c.column == r.column; });
    if (at == cells.end())
      cells.push_back(r);
    else
      *at = r;
  }
  return cells;
}

CsvError bad_cell(const Cell& cell, const std::string& reason) {
  return CsvError(cell.where + ": column '" + cell.column + "': bad value '" + cell.text + "': " + reason);
}

// Reads a scenario file and, in place of each include row, the file it includes.
class RowReader {
 public:
  std::vector<Row> rows;
  std::vector<fs::path> files;

  // Reads `file` with `replacements` (the including rows' cells) put into each of its rows.
  void read(const fs::path& file, const std::vector<Cell>& replacements) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(file, error);
    including_.push_back(error ? file : canonical);
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
    const CsvDocument doc = read_csv(file, /*allow_comments=*/true);
    const std::vector<std::string> columns = header(doc);
    for (const CsvRow& csv_row : doc.rows) {
      std::vector<Cell> cells;
      for (std::size_t c = 0; c < columns.size(); ++c) {
        std::string text = trim(csv_row.cells[c]);
        if (!text.empty()) cells.push_back({columns[c], std::move(text), doc.where(csv_row.line)});
      }
      const auto include = std::find_if(cells.begin(), cells.end(), [](const Cell& c) { return c.column == kInclude; });
      if (include == cells.end()) {
        rows.push_back({doc.where(csv_row.line), replaced(std::move(cells), replacements)});
        continue;
      }
      const Cell target = *include;
      cells.erase(include);
      read(included_file(file, target), replaced(std::move(cells), replacements));  // the outer row's cells win
    }
    including_.pop_back();
  }

 private:
  // The column names of doc's header: Problem fields, settings and `include`, each once.
  static std::vector<std::string> header(const CsvDocument& doc) {
    std::vector<std::string> known = problem_fields();
    known.insert(known.end(), setting_names().begin(), setting_names().end());
    known.emplace_back(kInclude);
    std::vector<std::string> columns;
    for (const std::string& cell : doc.header) {
      const std::string name = trim(cell);
      if (std::find(known.begin(), known.end(), name) == known.end())
        throw CsvError(doc.where(doc.header_line) + ": unknown column '" + name + "'; known: " + fmt::format("{}", fmt::join(known, ", ")));
      if (std::find(columns.begin(), columns.end(), name) != columns.end())
        throw CsvError(doc.where(doc.header_line) + ": column '" + name + "' appears twice");
      columns.push_back(name);
    }
    if (doc.rows.empty()) throw CsvError(doc.where(doc.header_line) + ": no rows after the header");
    return columns;
  }

  // The file an include cell names, relative to the including file; not one being read.
  fs::path included_file(const fs::path& from, const Cell& include) const {
    const fs::path target = from.parent_path() / include.text;
    std::error_code error;
    if (!fs::is_regular_file(target, error)) throw bad_cell(include, "no such file " + target.string());
    const fs::path canonical = fs::weakly_canonical(target, error);
    if (std::find(including_.begin(), including_.end(), canonical) != including_.end()) {
      std::string chain;
      for (const fs::path& f : including_) chain += f.filename().string() + " -> ";
      throw bad_cell(include, "includes itself (" + chain + target.filename().string() + ")");
    }
    return target;
  }

  std::vector<fs::path> including_;  // the files being read, outermost first
};

// The names of the settings in which a and b differ: "stages, peer".
std::string differences(const PointSettings& a, const PointSettings& b) {
  std::vector<std::string> names;
  if (a.name != b.name) names.emplace_back("name");
  if (a.bench.stages != b.bench.stages) names.emplace_back("stages");
  if (a.bench.repetitions != b.bench.repetitions) names.emplace_back("repetitions");
  if (a.bench.min_time != b.bench.min_time) names.emplace_back("min_time");
  if (a.peer != b.peer) names.emplace_back("peer");
  return fmt::format("{}", fmt::join(names, ", "));
}

// Identity of a point: every field but the scorer.
std::string point_key(const Problem& p) {
  std::string key;
  for (const auto& [field, value] : field_values(p))
    if (field != "scorer") key += value + '\x1f';
  return key;
}

// The points of one row, each with the row's settings.
Grid expand_row(const Row& row, const Problem& defaults) {
  PointSettings settings;
  GridBlock block;
  for (const Cell& cell : row.cells) {
    if (!is_setting(cell.column)) {
      block.fields.emplace_back(cell.column, cell.text);
      continue;
    }
    try {
      set_setting(settings, cell.column, cell.text, ';');
    } catch (const std::invalid_argument& e) {
      throw bad_cell(cell, e.what());
    }
  }
  Grid points;
  try {
    points = expand({block}, defaults, ';');
  } catch (const GridError& e) {
    const auto cell =
        std::find_if(row.cells.begin(), row.cells.end(), [&](const Cell& c) { return c.column == e.field(); });
    if (e.field().empty()) throw CsvError(row.where + ": " + e.reason());
    if (cell == row.cells.end())
      throw CsvError(row.where + ": column '" + e.field() + "': bad value '" + e.value() + "': " + e.reason() +
                     " (no column '" + e.field() + "' here: the default)");
    throw CsvError(cell->where + ": column '" + e.field() + "': bad value '" + e.value() + "': " + e.reason());
  }
  for (GridPoint& point : points) point.settings = settings;
  return points;
}

}  // namespace

Scenario load_scenario(const std::filesystem::path& file, const Problem& defaults) {
  RowReader reader;
  reader.read(file, {});
  Scenario scenario;
  scenario.files = reader.files;
  std::unordered_map<std::string, std::size_t> index;  // point_key -> position in the grid
  std::vector<std::string> planned_at;                 // where each point's first row is
  for (const Row& row : reader.rows) {
    for (GridPoint& point : expand_row(row, defaults)) {
      const auto [it, inserted] = index.try_emplace(point_key(point.problem), scenario.grid.size());
      if (inserted) {
        scenario.grid.push_back(std::move(point));
        planned_at.push_back(row.where);
        continue;
      }
      GridPoint& same = scenario.grid[it->second];
      if (!(same.settings == point.settings))
        throw CsvError(row.where + ": the point " + describe_point(GridPoint{point.problem, {}, {}}) +
                       " is also in " + planned_at[it->second] + " with other settings (" +
                       differences(same.settings, point.settings) + ")");
      for (const std::string& s : point.scorers)
        if (std::find(same.scorers.begin(), same.scorers.end(), s) == same.scorers.end()) same.scorers.push_back(s);
    }
  }
  return scenario;
}

std::filesystem::path resolve_scenario(std::string_view name_or_path, const std::filesystem::path& scenarios_dir) {
  std::error_code ec;
  const fs::path given(name_or_path);
  if (!name_or_path.empty() && fs::is_regular_file(given, ec)) return given;
  if (!name_or_path.empty() && !given.has_parent_path()) {
    for (const fs::path& candidate : {scenarios_dir / (std::string(name_or_path) + ".csv"), scenarios_dir / given})
      if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  std::set<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(scenarios_dir, ec))
    if (entry.path().extension() == ".csv") names.insert(entry.path().stem().string());
  std::string available;
  for (const std::string& n : names) available += (available.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown scenario '" + std::string(name_or_path) + "': not a file, and no " +
                              (scenarios_dir / (std::string(name_or_path) + ".csv")).string() +
                              "; available: " + (available.empty() ? "(none)" : available));
}

}  // namespace attnbench
