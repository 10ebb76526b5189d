// Long-format CSV of tensors: one row per element, full float precision.
#pragma once

#include <cstdint>

#include <fmt/format.h>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace attnbench {

// Formats x as %.9g (round-trips a float); infinities as inf and -inf.
inline std::string format_value(double x) { return fmt::format("{:.9g}", x); }

// A CSV text of tensor rows; only the tensors named in `wanted` (all when empty) are kept.
class CsvTable {
 public:
  explicit CsvTable(const std::vector<std::string>& header, std::set<std::string> wanted = {})
      : wanted_(std::move(wanted)) {
    add_row(header);
  }

  bool wants(const std::string& tensor) const { return wanted_.empty() || wanted_.contains(tensor); }

  void add_row(const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) text_ += (i ? "," : "") + cells[i];
    text_ += "\n";
  }
  const std::string& str() const { return text_; }

 private:
  std::set<std::string> wanted_;
  std::string text_;
};

// Adds rows `tensor[,t],b,i,value` for a (batch, n) row-major tensor; `t` adds the
// step column when given.
inline void add_matrix(CsvTable& table, const std::string& tensor, const std::optional<std::string>& t,
                       const std::vector<double>& values, std::int64_t batch) {
  if (!table.wants(tensor)) return;
  const std::size_t per_example = values.size() / static_cast<std::size_t>(batch);
  for (std::size_t k = 0; k < values.size(); ++k) {
    std::vector<std::string> row{tensor};
    if (t) row.push_back(*t);
    row.push_back(std::to_string(k / per_example));
    row.push_back(std::to_string(k % per_example));
    row.push_back(format_value(values[k]));
    table.add_row(row);
  }
}

}  // namespace attnbench
