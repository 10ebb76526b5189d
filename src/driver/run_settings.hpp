// How the points of a run are measured, besides their Problem: the settings a scenario row
// (scenario columns `name`, `stages`, `repetitions`, `min_time`, `peer`) or a run flag
// (--stages, --repetitions, --min-time, --peer) sets.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "driver/schema.hpp"

namespace attnbench {

// Every timed stage, in schema order: {"keys", "score", ..., "decode", "train_step"}.
inline std::vector<std::string> all_stages() { return {schema::kStages.begin(), schema::kStages.end()}; }

// The stages timed when --stages is not given, in schema order: every stage of
// driver/stages.def but the opt-in ones ({"keys", "score", ..., "decode"}; train_step only on request).
inline std::vector<std::string> default_stages() {
  std::vector<std::string> stages;
  for (std::string_view stage : schema::kStages)
    if (schema::is_default_stage(stage)) stages.emplace_back(stage);
  return stages;
}

// What Google Benchmark runs at a point.
struct BenchSettings {
  int repetitions = 5;
  double min_time = 0.05;                          // seconds per repetition
  std::vector<std::string> stages = default_stages();  // the stages to time, in schema order

  bool operator==(const BenchSettings&) const = default;
};

struct PointSettings {
  std::string name;     // the row's label, e.g. "paper" (meta.json's grid, perf_table.py); "" when none
  BenchSettings bench;  // repetitions, min_time, stages
  std::string peer;     // "torch": the PyTorch eager peer measures the point too; "" no peer

  bool operator==(const PointSettings&) const = default;
};

// The names of the settings, as scenario columns: {"name", "stages", "repetitions", "min_time", "peer"}.
const std::vector<std::string>& setting_names();

// Whether `column` names a setting.
bool is_setting(std::string_view column);

// Sets setting `name` (one of setting_names()) of `settings` from its text: a name (letters,
// digits, '_', '-', '.'), a list of stages separated by `list_separator` (',' on the command
// line, ';' in a scenario cell; stored in schema order), a whole number of repetitions >= 1,
// a positive number of seconds, or a peer, `torch` or `none`.
// Example: set_setting(s, "stages", "step;keys", ';') makes s.bench.stages {"keys", "step"}.
// Throws std::invalid_argument with the reason alone, e.g. "unknown stage 'x'; known: keys, ...".
void set_setting(PointSettings& settings, std::string_view name, std::string_view text, char list_separator);

}  // namespace attnbench
