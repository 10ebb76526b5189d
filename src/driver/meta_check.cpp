#include "driver/meta_check.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <stdexcept>

#include "driver/grid.hpp"
#include "driver/run_settings.hpp"
#include "driver/schema.hpp"
#include "driver/train_rows.hpp"

namespace attnbench {

namespace {

// The largest whole number a training's size or count may be in meta.json (seeds excepted).
constexpr std::uint64_t kMaxTrainingNumber = INT_MAX;

class Checker {
 public:
  explicit Checker(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void bad(const std::string& field, const std::string& reason, const nlohmann::json& got) const {
    std::string shown = got.dump();
    if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
    throw std::invalid_argument(where_ + ": field '" + field + "': " + reason + ", got " + shown);
  }

  const nlohmann::json& required(const nlohmann::json& object, const std::string& key, const std::string& field) const {
    if (!object.contains(key)) bad(field, "missing", nullptr);
    return object[key];
  }

  void string(const nlohmann::json& value, const std::string& field) const {
    if (!value.is_string()) bad(field, "must be a string", value);
  }

  void optional_string(const nlohmann::json& object, const std::string& key, const std::string& prefix = "") const {
    if (object.contains(key) && !object[key].is_null()) string(object[key], prefix + key);
  }

  void repetitions(const nlohmann::json& value, const std::string& field) const {
    const std::string reason = "must be a whole number from 1 to " + std::to_string(kMaxRepetitions);
    if (!value.is_number_integer()) bad(field, reason, value);
    const auto n = value.get<std::int64_t>();
    if (n < 1) bad(field, "must be ≥ 1", value);
    if (n > kMaxRepetitions) bad(field, reason, value);
  }

  void min_time(const nlohmann::json& value, const std::string& field) const {
    if (!value.is_number()) bad(field, "must be a number of seconds", value);
    const double s = value.get<double>();
    if (!(s > 0) || !std::isfinite(s)) bad(field, "must be > 0", value);
    if (s > kMaxMinTime) bad(field, "must be at most " + std::to_string(int(kMaxMinTime)) + " seconds", value);
  }

  // A value or, in a run-wide field, a list of the points' distinct values.
  template <class Check>
  void one_or_list(const nlohmann::json& object, const std::string& key, Check check) const {
    if (!object.contains(key)) return;
    const nlohmann::json& value = object[key];
    if (!value.is_array()) return (this->*check)(value, key);
    if (value.empty()) bad(key, "must not be an empty list", value);
    for (std::size_t i = 0; i < value.size(); ++i) (this->*check)(value[i], key + "[" + std::to_string(i) + "]");
  }

  void stages(const nlohmann::json& value, const std::string& field) const {
    const auto known = [](const nlohmann::json& s) {
      return s.is_string() &&
             std::find(schema::kStages.begin(), schema::kStages.end(), s.get<std::string>()) != schema::kStages.end();
    };
    if (!value.is_array() || value.empty() || !std::all_of(value.begin(), value.end(), known))
      bad(field, "must be a non-empty list of stages", value);
  }

  void names(const nlohmann::json& value, const std::string& field) const {
    if (!value.is_array() || value.empty() ||
        !std::all_of(value.begin(), value.end(), [](const nlohmann::json& s) { return s.is_string(); }))
      bad(field, "must be a non-empty list of names", value);
  }

  void boolean(const nlohmann::json& object, const std::string& key, const std::string& field) const {
    if (object.contains(key) && !object[key].is_boolean()) bad(field, "must be true or false", object[key]);
  }

  // A whole number from `low` to `high`.
  void whole(const nlohmann::json& value, std::int64_t low, std::int64_t high, const std::string& field) const {
    if (!value.is_number_integer() || value.get<std::int64_t>() < low || value.get<std::int64_t>() > high)
      bad(field, "must be a whole number from " + std::to_string(low) + " to " + std::to_string(high), value);
  }

  void strings(const nlohmann::json& object, const std::string& key, const std::string& field) const {
    if (!object.contains(key)) return;
    const nlohmann::json& value = object[key];
    if (!value.is_array() || !std::all_of(value.begin(), value.end(), [](const nlohmann::json& s) { return s.is_string(); }))
      bad(field, "must be a list of strings", value);
  }

  // merged_from[i] of a merged run: where each shard came from.
  void merged_from(const nlohmann::json& value) const {
    if (!value.is_array()) bad("merged_from", "must be a list of shards", value);
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string at = "merged_from[" + std::to_string(i) + "]";
      if (!value[i].is_object()) bad(at, "must be an object", value[i]);
      for (const char* key :
           {"folder", "shard", "status", "host", "cpu_model", "cpu_id", "fused_loops", "fused_bf16_query", "command"})
        optional_string(value[i], key, at + ".");
    }
  }

  void slurm(const nlohmann::json& value) const {
    if (!value.is_object()) bad("slurm", "must be an object", value);
    whole(required(value, "shards", "slurm.shards"), 1, static_cast<std::int64_t>(kMaxGridPoints), "slurm.shards");
    const auto count = value["shards"].get<std::int64_t>();
    for (const char* key : {"command", "sweep", "time", "partition", "account"}) optional_string(value, key, "slurm.");
    strings(value, "sweep_args", "slurm.sweep_args");
    strings(value, "sbatch_args", "slurm.sbatch_args");
    boolean(value, "allow_mixed", "slurm.allow_mixed");
    for (const char* key : {"cpus_per_task", "mem_mib"})
      if (value.contains(key)) whole(value[key], 1, std::int64_t{1} << 40, std::string("slurm.") + key);
    if (value.contains("array_parallel") && !value["array_parallel"].is_null())
      whole(value["array_parallel"], 1, count, "slurm.array_parallel");
    if (!value.contains("submissions")) return;
    const nlohmann::json& submissions = value["submissions"];
    if (!submissions.is_array()) bad("slurm.submissions", "must be a list of submissions", submissions);
    for (std::size_t i = 0; i < submissions.size(); ++i) {
      const std::string at = "slurm.submissions[" + std::to_string(i) + "]";
      const nlohmann::json& entry = submissions[i];
      if (!entry.is_object()) bad(at, "must be an object", entry);
      optional_string(entry, "utc", at + ".");
      optional_string(entry, "array_job", at + ".");
      optional_string(entry, "merge_job", at + ".");
      const nlohmann::json& shards = required(entry, "shards", at + ".shards");
      if (!shards.is_array()) bad(at + ".shards", "must be a list of shard numbers", shards);
      for (std::size_t k = 0; k < shards.size(); ++k) whole(shards[k], 1, count, at + ".shards[" + std::to_string(k) + "]");
    }
  }

  void shard(const nlohmann::json& value) const {
    int k = 0, n = 0, used = 0;
    if (!value.is_string()) bad("shard", "must be a string K/N", value);
    const std::string text = value.get<std::string>();
    if (std::sscanf(text.c_str(), "%d/%d%n", &k, &n, &used) != 2 || used != static_cast<int>(text.size()) || k < 1 ||
        n < 1 || k > n)
      bad("shard", "must be K/N with 1 <= K <= N", value);
  }

  // A cell of a training (meta.json's grid of a train run): text, numbers as text.
  void training_cell(const nlohmann::json& value, const std::string& column, const std::string& field) const {
    if (!value.is_string() || value.get<std::string>().empty()) bad(field, "must be a non-empty string", value);
    const std::string text = value.get<std::string>();
    if (column == "task" || column == "scorer" || column == "impl" || column == "dtype") return;
    if (column == "lr" || column == "clip") {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size() || !std::isfinite(v) || !(v > 0)) bad(field, "must be a number > 0", value);
      return;
    }
    const std::int64_t low = column == "seed" || column == "long_len" ? 0 : 1;
    const std::uint64_t high = column == "seed" ? UINT64_MAX : kMaxTrainingNumber;
    const bool digits = text.size() <= 20 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    errno = 0;
    const std::uint64_t v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
    if (!digits || errno != 0 || v < static_cast<std::uint64_t>(low) || v > high)
      bad(field, "must be a whole number from " + std::to_string(low) + " to " + std::to_string(high), value);
  }

  void training(const nlohmann::json& entry, const std::string& at) const {
    if (!entry.is_object()) bad(at, "must be an object", entry);
    std::vector<std::string> columns = train_key_columns();
    for (const std::string& column : train_setting_columns()) columns.push_back(column);
    for (const std::string& column : columns)
      training_cell(required(entry, column, at + "." + column), column, at + "." + column);
  }

  void point(const nlohmann::json& entry, const std::string& at) const {
    if (!entry.is_object()) bad(at, "must be an object", entry);
    for (const std::string& name : problem_fields())
      if (name != "scorer") string(required(entry, name, at + "." + name), at + "." + name);
    names(required(entry, "scorers", at + ".scorers"), at + ".scorers");
    optional_string(entry, "name", at + ".");
    if (entry.contains("stages")) stages(entry["stages"], at + ".stages");
    if (entry.contains("repetitions")) repetitions(entry["repetitions"], at + ".repetitions");
    if (entry.contains("min_time_s")) min_time(entry["min_time_s"], at + ".min_time_s");
    if (entry.contains("peer") && !entry["peer"].is_string()) bad(at + ".peer", "must be a string", entry["peer"]);
  }

 private:
  std::string where_;
};

}  // namespace

void check_run_meta(const nlohmann::json& meta, const std::string& where) {
  const Checker c(where);
  if (!meta.is_object()) c.bad("(top)", "must be an object", meta);
  if (meta.contains("kind") && meta["kind"] != "train") c.bad("kind", "must be \"train\" or absent (a run)", meta["kind"]);
  const bool train = meta.contains("kind");
  const nlohmann::json& grid = c.required(meta, "grid", "grid");
  if (!grid.is_array()) c.bad("grid", train ? "must be a list of trainings" : "must be a list of points", grid);
  if (grid.size() > kMaxGridPoints) c.bad("grid", "must hold at most " + std::to_string(kMaxGridPoints) + " points", grid.size());
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const std::string at = "grid[" + std::to_string(i) + "]";
    if (train)
      c.training(grid[i], at);
    else
      c.point(grid[i], at);
  }
  c.one_or_list(meta, "repetitions", &Checker::repetitions);
  c.one_or_list(meta, "min_time_s", &Checker::min_time);
  if (meta.contains("stages")) c.stages(meta["stages"], "stages");
  if (meta.contains("shard")) c.shard(meta["shard"]);
  if (meta.contains("points") && !meta["points"].is_number_unsigned() &&
      !(meta["points"].is_number_integer() && meta["points"].get<std::int64_t>() >= 0))
    c.bad("points", "must be a whole number ≥ 0", meta["points"]);
  for (const char* key : {"scenario", "status", "command", "start_utc", "end_utc", "error"}) c.optional_string(meta, key);
  if (meta.contains("scenario_files")) {
    const nlohmann::json& files = meta["scenario_files"];
    if (!files.is_array()) c.bad("scenario_files", "must be a list of files", files);
    for (std::size_t i = 0; i < files.size(); ++i) {
      const std::string at = "scenario_files[" + std::to_string(i) + "]";
      if (!files[i].is_object()) c.bad(at, "must be an object with path and sha256", files[i]);
      for (const char* key : {"path", "sha256"}) c.string(c.required(files[i], key, at + "." + key), at + "." + key);
    }
  }
  if (meta.contains("resumed_utc") && !meta["resumed_utc"].is_array() && !meta["resumed_utc"].is_null())
    c.bad("resumed_utc", "must be a list of times", meta["resumed_utc"]);
  if (meta.contains("build")) {
    if (!meta["build"].is_object()) c.bad("build", "must be an object", meta["build"]);
    for (const char* key :
         {"host", "onednn_version", "git_commit", "cpu_model", "cpu_id", "compiler", "compiler_flags", "fused_loops",
          "fused_bf16_query"})
      c.optional_string(meta["build"], key, "build.");
  }
  c.boolean(meta, "allow_mixed", "allow_mixed");
  c.optional_string(meta, "missing_shards");
  if (meta.contains("merged_from")) c.merged_from(meta["merged_from"]);
  if (meta.contains("slurm")) c.slurm(meta["slurm"]);
  if (meta.contains("peer") && !meta["peer"].is_null()) {
    const nlohmann::json& peer = meta["peer"];
    if (peer.is_object())
      c.optional_string(peer, "torch_version", "peer.");
    else if (!peer.is_string())
      c.bad("peer", "must be a peer's description or null", peer);
  }
}

void check_slurm_run_meta(const nlohmann::json& meta, const std::string& where) {
  const Checker c(where);
  if (!meta.is_object()) c.bad("(top)", "must be an object", meta);
  c.optional_string(meta, "status");
  c.slurm(c.required(meta, "slurm", "slurm"));
}

void check_slurm_entry(const nlohmann::json& slurm, const std::string& where) { Checker(where).slurm(slurm); }

}  // namespace attnbench
