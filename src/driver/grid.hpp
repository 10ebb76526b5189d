// A sweep grid: the Problems to run and, at each, the scorers to interleave.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/problem.hpp"
#include "driver/run_settings.hpp"

namespace attnbench {

// One point of a sweep: the point runs every name in `scorers`, interleaved;
// problem.scorer is only scorers.front(). `settings` say how it is measured.
struct GridPoint {
  Problem problem;
  std::vector<std::string> scorers;
  PointSettings settings = {};
};
using Grid = std::vector<GridPoint>;

// One block of a sweep: for each named field, its textual spec (see value_spec.hpp);
// fields not named keep their default. Example: {{"src_len", "10,50"}, {"scorer", "all"}}.
struct GridBlock {
  std::vector<std::pair<std::string, std::string>> fields;
};

// A bad field value. what() is the CLI form "--src-len: bad value '7': <reason>";
// callers that read a file build their own prefix from field(), value() and reason().
class GridError : public std::invalid_argument {
 public:
  GridError(std::string field, std::string value, std::string reason, std::size_t block = 0);
  const std::string& field() const { return field_; }    // Problem field, e.g. "src_len"
  const std::string& value() const { return value_; }    // the spec, or the one value that failed
  const std::string& reason() const { return reason_; }  // e.g. "must be even ..."
  std::size_t block() const { return block_; }           // index of the offending block

 private:
  std::string field_, value_, reason_;
  std::size_t block_;
};

// Names of the Problem fields, in Problem's order; they are the scenario column names.
const std::vector<std::string>& problem_fields();

// "--src-len" for "src_len": the CLI flag of a field.
std::string flag_name(std::string_view field);

// validate_sizes() as a GridError naming the field, its value and the reason, e.g.
// "--batch: bad value '0': must be a positive whole number"; `block` is for GridError::block().
void check_sizes(const Problem& p, std::size_t block = 0);

// Most points one block may expand to.
inline constexpr std::size_t kMaxBlockPoints = 1000000;

// Expands blocks into the union of their cartesian products, in first-seen order and
// without duplicate points: blocks yielding the same Problem share one point whose
// scorers are the union (first-seen order). Within a block the first field named varies
// slowest; a block that names no scorer runs defaults.scorer. Every point passes
// validate_sizes() (memory is not checked here); impl onednn or fused, dtype f32 or bf16, init fast or torch.
// Example: expand({{{{"src_len", "10,50"}, {"threads", "1,2"}}}}, Problem{}, ',') yields
// (10,1), (10,2), (50,1), (50,2). Throws GridError naming the field, value and block.
Grid expand(const std::vector<GridBlock>& blocks, const Problem& defaults, char list_separator);

}  // namespace attnbench
