// Reading and writing RFC 4180 CSV (libcsv underneath).
#pragma once

#include <cstddef>
#include <filesystem>
#include <istream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attnbench {

// A CSV file that does not parse or does not fit its header; what() is "file:line: reason".
class CsvError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct CsvRow {
  std::size_t line = 0;  // 1-based line number in the file
  std::vector<std::string> cells;
};

struct CsvDocument {
  std::filesystem::path path;
  std::vector<std::string> header;
  std::size_t header_line = 0;
  std::vector<CsvRow> rows;

  // Index of the column called `name`, if any.
  std::optional<std::size_t> column(std::string_view name) const;
  // "path:line" for messages.
  std::string where(std::size_t line) const;
};

// Reads a whole CSV file: the first record is the header, every other record must have
// as many cells. Blank lines are skipped; with allow_comments, so are lines starting
// with '#'. Throws CsvError naming file:line.
CsvDocument read_csv(const std::filesystem::path& path, bool allow_comments = false);

// read_csv() of text from `in`; `path` names it in messages.
CsvDocument parse_csv(const std::filesystem::path& path, std::istream& in, bool allow_comments = false);

// One CSV record with its newline; cells are quoted only where RFC 4180 needs it.
// Example: csv_line({"a", "b,c"}) == "a,\"b,c\"\n".
std::string csv_line(const std::vector<std::string>& cells);

}  // namespace attnbench
