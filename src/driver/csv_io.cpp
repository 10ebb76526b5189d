#include "driver/csv_io.hpp"

#include <csv.h>

#include <fstream>
#include <memory>

namespace attnbench {

namespace {

struct ParseState {
  std::vector<std::string> cells;
  std::vector<std::vector<std::string>> records;
  bool open = false;  // a record is under way (its text began on an earlier line)
};

void on_field(void* data, std::size_t size, void* state) {
  static_cast<ParseState*>(state)->cells.emplace_back(static_cast<const char*>(data), size);
}

void on_record(int, void* state) {
  auto* s = static_cast<ParseState*>(state);
  s->records.push_back(std::move(s->cells));
  s->cells.clear();
  s->open = false;
}

bool skipped(const std::string& line, bool allow_comments) {
  const std::size_t first = line.find_first_not_of(" \t\r");
  return first == std::string::npos || (allow_comments && line[first] == '#');
}

}  // namespace

std::optional<std::size_t> CsvDocument::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  return std::nullopt;
}

std::string CsvDocument::where(std::size_t line) const { return path.string() + ":" + std::to_string(line); }

CsvDocument read_csv(const std::filesystem::path& path, bool allow_comments) {
  std::ifstream in(path);
  if (!in) throw CsvError(path.string() + ": cannot open for reading");
  return parse_csv(path, in, allow_comments);
}

CsvDocument parse_csv(const std::filesystem::path& path, std::istream& in, bool allow_comments) {
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0) throw std::runtime_error("csv_init failed");
  const std::unique_ptr<csv_parser, void (*)(csv_parser*)> cleanup(&parser, csv_free);

  CsvDocument doc;
  doc.path = path;
  ParseState state;
  std::string line;
  std::size_t number = 0, record_start = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!state.open && skipped(line, allow_comments)) continue;
    if (!state.open) record_start = number;
    state.open = true;
    line += '\n';
    if (csv_parse(&parser, line.data(), line.size(), on_field, on_record, &state) != line.size())
      throw CsvError(doc.where(number) + ": malformed CSV (" + csv_strerror(csv_error(&parser)) + ")");
    for (auto& record : state.records) {
      if (doc.header.empty()) {
        doc.header = std::move(record);
        doc.header_line = record_start;
      } else {
        if (record.size() != doc.header.size())
          throw CsvError(doc.where(record_start) + ": expected " + std::to_string(doc.header.size()) +
                         " cells as in the header, got " + std::to_string(record.size()));
        doc.rows.push_back({record_start, std::move(record)});
      }
    }
    state.records.clear();
  }
  if (csv_fini(&parser, on_field, on_record, &state) != 0 || !state.records.empty())
    throw CsvError(doc.where(number) + ": malformed CSV (unterminated quoted field)");
  if (doc.header.empty()) throw CsvError(path.string() + ":1: empty file, expected a header line");
  return doc;
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    const std::string& cell = cells[i];
    if (cell.find_first_of(",\"\r\n") == std::string::npos) {
      out += cell;
      continue;
    }
    std::string quoted(cell.size() * 2 + 2, '\0');
    quoted.resize(csv_write(quoted.data(), quoted.size(), cell.data(), cell.size()));
    out += quoted;
  }
  return out + '\n';
}

}  // namespace attnbench
