#include "driver/scenario.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>

#include "driver/csv_io.hpp"

namespace attnbench {

namespace {

std::string trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return std::string(s.substr(first, s.find_last_not_of(" \t\r") - first + 1));
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Grid load_scenario(const std::filesystem::path& file, const Problem& defaults) {
  const CsvDocument doc = read_csv(file, /*allow_comments=*/true);
  const std::vector<std::string>& known = problem_fields();
  std::vector<std::string> columns;
  for (const std::string& cell : doc.header) {
    const std::string name = trim(cell);
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw CsvError(doc.where(doc.header_line) + ": unknown column '" + name + "'; known: " + joined(known));
    if (std::find(columns.begin(), columns.end(), name) != columns.end())
      throw CsvError(doc.where(doc.header_line) + ": column '" + name + "' appears twice");
    columns.push_back(name);
  }
  if (doc.rows.empty()) throw CsvError(doc.where(doc.header_line) + ": no rows after the header");

  std::vector<GridBlock> blocks;
  for (const CsvRow& row : doc.rows) {
    GridBlock block;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      std::string spec = trim(row.cells[c]);
      if (!spec.empty()) block.fields.emplace_back(columns[c], std::move(spec));
    }
    blocks.push_back(std::move(block));
  }
  try {
    return expand(blocks, defaults, ';');
  } catch (const GridError& e) {
    const std::string where = doc.where(doc.rows.at(e.block()).line);
    if (e.field().empty()) throw CsvError(where + ": " + e.reason());
    std::string reason = e.reason();
    if (std::find(columns.begin(), columns.end(), e.field()) == columns.end())
      reason += " (no column '" + e.field() + "' here: the default)";
    throw CsvError(where + ": column '" + e.field() + "': bad value '" + e.value() + "': " + reason);
  }
}

std::filesystem::path resolve_scenario(std::string_view name_or_path, const std::filesystem::path& scenarios_dir) {
  namespace fs = std::filesystem;
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
