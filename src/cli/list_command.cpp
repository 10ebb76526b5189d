// `attnbench list`: the scorers (formula, parameters, paper) and the scenario files;
// `attnbench list --json`: every list the scripts and tests read (scorers, stages,
// Problem fields, choices, file columns, metrics, units), from the .def registries.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/source_paths.hpp"
#include "driver/folder_kind.hpp"
#include "driver/grid.hpp"
#include "driver/schema.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

int run_list() {
  std::cout << "Scorers:\n";
  for (const ScorerInfo& info : scorer_table())
    std::cout << "  " << info.name << "\n      " << info.formula << "\n      parameters: " << info.parameters
              << "\n      source: " << info.paper << "\n";
  std::cout << "Scenarios (" << scenarios_dir().string() << "):\n";
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(scenarios_dir(), error))
    if (entry.path().extension() == ".csv") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) std::cout << "  (none)\n";
  for (const std::string& name : names) std::cout << "  " << name << "\n";
  return 0;
}

nlohmann::ordered_json scorers_json() {
  nlohmann::ordered_json scorers = nlohmann::ordered_json::array();
  for (const ScorerInfo& info : scorer_table()) {
    nlohmann::ordered_json modules = nlohmann::ordered_json::array();
    for (const ScorerModule& m : info.modules)
      modules.push_back({{"name", m.name}, {"kind", m.kind}, {"in", m.in}, {"out", m.out}, {"bias", m.bias}});
    scorers.push_back({{"name", info.name},
                       {"formula", info.formula},
                       {"parameters", info.parameters},
                       {"paper", info.paper},
                       {"modules", modules}});
  }
  return scorers;
}

nlohmann::ordered_json stages_json() {
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
#define ATTNBENCH_STAGE(name, per, timing, description) \
  stages.push_back(                                     \
      {{"name", #name}, {"per", #per}, {"description", description}, {"default", schema::is_default_stage(#name)}});
#include "driver/stages.def"
  return stages;
}

template <typename E>
nlohmann::ordered_json choice_words();
template <>
nlohmann::ordered_json choice_words<Impl>() {
  return {
#define ATTNBENCH_IMPL(word) #word,
#include "core/choices.def"
  };
}
template <>
nlohmann::ordered_json choice_words<DType>() {
  return {
#define ATTNBENCH_DTYPE(word) #word,
#include "core/choices.def"
  };
}
template <>
nlohmann::ordered_json choice_words<InitKind>() {
  return {
#define ATTNBENCH_INIT(word) #word,
#include "core/choices.def"
  };
}

nlohmann::ordered_json fields_json() {
  const auto defaults = field_values(Problem{});
  const auto default_of = [&](std::string_view name) {
    for (const auto& [field, value] : defaults)
      if (field == name) return value;
    throw std::logic_error("no default for field " + std::string(name));
  };
  nlohmann::ordered_json fields = nlohmann::ordered_json::array();
#define ATTNBENCH_FIELD(name, flag, cpp_type, kind, default_value, decoder_only, description) \
  {                                                                                            \
    nlohmann::ordered_json field = {{"name", #name},                                                   \
                            {"flag", flag},                                                    \
                            {"type", #kind},                                                   \
                            {"default", default_of(#name)},                                    \
                            {"description", description}};                                    \
    if constexpr (std::is_enum_v<cpp_type>) field["choices"] = choice_words<cpp_type>();       \
    fields.push_back(std::move(field));                                                        \
  }
#include "core/problem_fields.def"
  return fields;
}

nlohmann::ordered_json files_json() {
  nlohmann::ordered_json timing_key = nlohmann::ordered_json::array(), timing_values = nlohmann::ordered_json::array(),
                 sample_values = nlohmann::ordered_json::array(), entropy_key = nlohmann::ordered_json::array(),
                 entropy_values = nlohmann::ordered_json::array();
#define ATTNBENCH_TIMING_KEY(column) timing_key.push_back(#column);
#define ATTNBENCH_TIMING_VALUE(column, unit, definition) timing_values.push_back(#column);
#define ATTNBENCH_SAMPLE_VALUE(column, unit, definition) sample_values.push_back(#column);
#define ATTNBENCH_ENTROPY_KEY(column) entropy_key.push_back(#column);
#include "driver/columns.def"
#define ATTNBENCH_METRIC(column, cpp_type, unit, definition) entropy_values.push_back(#column);
#include "driver/metrics.def"
  nlohmann::ordered_json train_key = nlohmann::ordered_json::array(), curve_values = nlohmann::ordered_json::array(),
                         final_values = nlohmann::ordered_json::array(),
                         attention_values = nlohmann::ordered_json::array();
#define ATTNBENCH_TRAIN_KEY(column) train_key.push_back(#column);
#define ATTNBENCH_TRAIN_CURVE(column, unit, definition) curve_values.push_back(#column);
#define ATTNBENCH_TRAIN_FINAL(column, unit, definition) final_values.push_back(#column);
#define ATTNBENCH_TRAIN_ATTENTION(column, unit, definition) attention_values.push_back(#column);
#include "driver/train_columns.def"
  return {{"timing.csv", {{"key", timing_key}, {"values", timing_values}}},
          {"samples.csv", {{"key", timing_key}, {"values", sample_values}}},
          {"entropy.csv", {{"key", entropy_key}, {"values", entropy_values}}},
          {"train.csv", {{"key", train_key}, {"values", curve_values}}},
          {"train_final.csv", {{"key", train_key}, {"values", final_values}}},
          {"train_attention.csv", {{"key", train_key}, {"values", attention_values}}}};
}

// The data files of each kind of run folder (driver/folder_kind.hpp), in the journal's order,
// each with how many leading cells key its rows (merge keeps each such key once).
nlohmann::ordered_json folders_json() {
  nlohmann::ordered_json folders = nlohmann::ordered_json::object();
  for (const auto& [kind, name] : {std::pair{FolderKind::run, "run"}, std::pair{FolderKind::train, "train"}}) {
    folders[name] = nlohmann::ordered_json::array();
    for (const DataFile& file : data_files(kind))
      folders[name].push_back({{"name", file.name}, {"row_key", file.key_columns}});
  }
  return folders;
}

// The tasks of `attnbench train` (train/tasks.def) in list order.
nlohmann::ordered_json tasks_json() {
  nlohmann::ordered_json tasks = nlohmann::ordered_json::array();
#define ATTNBENCH_TASK(name, min_src_len, target_len, description) \
  tasks.push_back({{"name", #name}, {"min_src_len", min_src_len}, {"description", description}});
#include "train/tasks.def"
#undef ATTNBENCH_TASK
  return tasks;
}

nlohmann::ordered_json metrics_json() {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
#define ATTNBENCH_METRIC(column, cpp_type, unit, definition) \
  metrics.push_back({{"column", #column}, {"unit", unit}, {"definition", definition}});
#include "driver/metrics.def"
  return metrics;
}

// Unit of every value column ("" for a count, a ratio or a text).
nlohmann::ordered_json units_json() {
  nlohmann::ordered_json units = nlohmann::ordered_json::object();
#define ATTNBENCH_TIMING_VALUE(column, unit, definition) units[#column] = unit;
#define ATTNBENCH_SAMPLE_VALUE(column, unit, definition) units[#column] = unit;
#include "driver/columns.def"
#define ATTNBENCH_METRIC(column, cpp_type, unit, definition) units[#column] = unit;
#include "driver/metrics.def"
#define ATTNBENCH_TRAIN_CURVE(column, unit, definition) units[#column] = unit;
#define ATTNBENCH_TRAIN_FINAL(column, unit, definition) units[#column] = unit;
#include "driver/train_columns.def"
  return units;
}

int run_list_json() {
  const nlohmann::ordered_json lists = {{"scorers", scorers_json()},
                                {"stages", stages_json()},
                                {"fields", fields_json()},
                                {"dtypes", choice_words<DType>()},
                                {"impls", choice_words<Impl>()},
                                {"inits", choice_words<InitKind>()},
                                {"tasks", tasks_json()},
                                {"files", files_json()},
                                {"folders", folders_json()},
                                {"metrics", metrics_json()},
                                {"units", units_json()}};
  std::cout << lists.dump(2) << "\n";
  return 0;
}

}  // namespace

void setup_list(CLI::App& app, int& exit_code) {
  CLI::App* sub = app.add_subcommand("list", "List the scorers (formula, parameters, source paper) and the scenarios");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json,
                "Print every list as one JSON object instead: scorers, stages, Problem fields, dtypes, impls, "
                "inits, the columns of each output file, each run folder kind's files, metrics and units");
  sub->callback([json, &exit_code] { exit_code = *json ? run_list_json() : run_list(); });
}

}  // namespace attnbench
