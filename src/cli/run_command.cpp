// `attnbench run`: a sweep over a grid (from flags or a scenario file) into a run folder.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/problem_flags.hpp"
#include "cli/source_paths.hpp"
#include "cli/sweep_plan.hpp"
#include "driver/grid_json.hpp"
#include "driver/run_folder.hpp"
#include "driver/scenario.hpp"
#include "driver/schema.hpp"
#include "driver/sweep.hpp"

namespace attnbench {

namespace {

struct RunOptions {
  std::map<std::string, std::string> specs;  // grid flags given, by field
  std::string scenario, out, resume, shard = "1/1";
  std::optional<std::string> stages, peer;  // unset: every stage, no peer (or, with --resume, the run's)
  bool force = false, dry_run = false, quiet = false;
  int repetitions = 5;
  double min_time = 0.05;
  std::optional<double> max_memory_gib;  // unset: 75% of MemAvailable
  std::string command_line;
};

// Parses "K/N" with 1 <= K <= N.
std::pair<int, int> parse_shard(const std::string& text) {
  int k = 0, n = 0;
  char slash = 0, extra = 0;
  std::istringstream in(text);
  if (!(in >> k >> slash >> n) || slash != '/' || (in >> extra) || k < 1 || n < 1 || k > n)
    throw std::invalid_argument("--shard: bad value '" + text + "'; expected K/N with 1 <= K <= N, e.g. 2/4");
  return {k, n};
}

// The stages of a comma list such as "step,keys", in schema order ({"keys", "step"}).
std::vector<std::string> parse_stages(const std::string& text) {
  std::vector<std::string> named;
  std::istringstream in(text + ",");
  for (std::string name; std::getline(in, name, ',');) {
    if (std::find(schema::kStages.begin(), schema::kStages.end(), name) == schema::kStages.end()) {
      std::string known;
      for (std::string_view stage : schema::kStages) known += (known.empty() ? "" : ", ") + std::string(stage);
      throw std::invalid_argument("--stages: unknown stage '" + name + "' in '" + text + "'; known: " + known);
    }
    named.push_back(name);
  }
  std::vector<std::string> stages;
  for (const std::string& stage : all_stages())
    if (std::find(named.begin(), named.end(), stage) != named.end()) stages.push_back(stage);
  return stages;
}

// The peer of --peer NAME; only "torch" exists (scripts/peer_torch.py on ATTNBENCH_PYTHON).
PeerCommand parse_peer(const std::string& name) {
  if (name != "torch") throw std::invalid_argument("--peer: unknown peer '" + name + "'; known: torch");
  return {ATTNBENCH_PYTHON, project_root() / "scripts" / "peer_torch.py"};
}

// "a,b" of the JSON list ["a", "b"].
std::string comma_list(const nlohmann::json& names) {
  std::string out;
  for (const nlohmann::json& name : names) out += (out.empty() ? "" : ",") + name.get<std::string>();
  return out;
}

nlohmann::json read_meta(const std::filesystem::path& dir) {
  std::ifstream in(dir / "meta.json");
  if (!in) throw std::invalid_argument("--resume: " + (dir / "meta.json").string() + " not found; is this a run folder?");
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded() || !meta.contains("grid"))
    throw std::invalid_argument("--resume: " + (dir / "meta.json").string() + " is not a run's meta.json");
  return meta;
}

SweepOptions sweep_options(const RunOptions& o) {
  SweepOptions s;
  s.command_line = o.command_line;
  s.force = o.force;
  s.dry_run = o.dry_run;
  s.quiet = o.quiet;
  s.bench.repetitions = o.repetitions;
  s.bench.min_time = o.min_time;
  if (o.stages) s.bench.stages = parse_stages(*o.stages);
  if (o.peer) s.peer = parse_peer(*o.peer);
  if (o.repetitions < 1) throw std::invalid_argument("--repetitions: must be at least 1, got " + std::to_string(o.repetitions));
  if (!(o.min_time > 0) || !std::isfinite(o.min_time))
    throw std::invalid_argument("--min-time: must be a positive number of seconds, got " + std::to_string(o.min_time));
  if (o.max_memory_gib && !(*o.max_memory_gib > 0 && std::isfinite(*o.max_memory_gib)))
    throw std::invalid_argument("--max-memory: must be a positive number of GiB, got " + std::to_string(*o.max_memory_gib));
  s.max_memory_bytes = o.max_memory_gib ? static_cast<std::uint64_t>(*o.max_memory_gib * 1024 * 1024 * 1024)
                                        : available_memory_bytes() / 4 * 3;
  std::tie(s.shard_index, s.shard_count) = parse_shard(o.shard);
  s.machine_json = project_root() / "results" / "machine.json";

  if (!o.resume.empty()) {
    if (!o.specs.empty() || !o.scenario.empty() || !o.out.empty() || o.stages || o.peer)
      throw std::invalid_argument(
          "--resume: continues the run as it was planned; drop the grid flags, --scenario, --out, --stages and --peer");
    const nlohmann::json meta = read_meta(o.resume);
    s.resume = true;
    s.out_dir = o.resume;
    s.grid = grid_from_json(meta["grid"]);
    s.scenario = meta.value("scenario", "custom");
    s.bench.repetitions = meta.value("repetitions", o.repetitions);
    s.bench.min_time = meta.value("min_time_s", o.min_time);
    if (meta.contains("stages") && meta["stages"].is_array())
      s.bench.stages = parse_stages(comma_list(meta["stages"]));
    if (meta.contains("peer") && meta["peer"].is_object()) s.peer = parse_peer(meta["peer"].value("name", ""));
    if (meta.contains("shard")) std::tie(s.shard_index, s.shard_count) = parse_shard(meta["shard"]);
    return s;
  }

  Problem defaults;
  defaults.scorer = "all";
  if (!o.specs.empty()) {
    if (!o.scenario.empty())
      throw std::invalid_argument(flag_name(o.specs.begin()->first) +
                                  ": grid flags and --scenario do not mix; put the value in the scenario file");
    GridBlock block;
    for (const auto& [field, spec] : o.specs) block.fields.emplace_back(field, spec);
    if (!o.specs.contains("scorer")) block.fields.emplace_back("scorer", "all");
    s.grid = expand({block}, defaults, ',');
    s.scenario = "custom";
  } else {
    const std::filesystem::path file = resolve_scenario(o.scenario.empty() ? "default" : o.scenario, scenarios_dir());
    s.grid = load_scenario(file, defaults);
    s.scenario = file.stem().string();
    s.scenario_files = {file};
  }
  s.out_dir = o.out.empty() ? default_run_dir(project_root() / "results", s.scenario) : std::filesystem::path(o.out);
  return s;
}

// Adds run's flags to `sub`, storing into `o`.
void add_run_options(CLI::App* sub, const std::shared_ptr<RunOptions>& o) {
  add_grid_flags(*sub, o->specs);
  sub->add_option("--scenario", o->scenario, "Scenario name in scenarios/ or a CSV path (default: default)");
  sub->add_option("--out", o->out, "Run folder to write (default results/<scenario>/<UTC timestamp>)");
  sub->add_option("--resume", o->resume, "Continue the run in this folder, skipping the points it holds");
  sub->add_flag("--force", o->force, "With --resume: continue a run made on another machine, oneDNN or commit");
  sub->add_option("--repetitions", o->repetitions, "Repetitions per scorer x stage")->capture_default_str();
  sub->add_option("--min-time", o->min_time, "Seconds each repetition runs at least")->capture_default_str();
  sub->add_option("--max-memory", o->max_memory_gib,
                  "GiB a point may use; larger points get a skipped row (default: 75% of MemAvailable)");
  sub->add_option("--stages", o->stages,
                  "Comma list of the stages to time and write (default all: keys,score,attend,step,cell,output,"
                  "encoder,decode)");
  sub->add_option("--peer", o->peer,
                  "Also time every point with a peer, interleaved, its rows in the same files: torch (PyTorch "
                  "eager, scripts/peer_torch.py; once per point whatever its impl)");
  sub->add_flag("--dry-run", o->dry_run, "List the points with memory and time estimates; run nothing");
  sub->add_option("--shard", o->shard, "Run shard K of N (every N-th point from K); join with `attnbench merge`")
      ->capture_default_str();
  sub->add_flag("--quiet", o->quiet, "No progress line on stderr");
}

}  // namespace

SweepPlan plan_run_sweep(const std::vector<std::string>& args, int shards) {
  auto o = std::make_shared<RunOptions>();
  CLI::App app{"attnbench run", "attnbench run"};
  add_run_options(&app, o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a vector back to front
  app.parse(reversed);
  const SweepOptions s = sweep_options(*o);
  return {s.scenario, grid_to_json(s.grid), s.grid.size(),
          shard_needs(s.grid, s.bench, s.peer.has_value(), s.max_memory_bytes, shards)};
}

void setup_run(CLI::App& app, int& exit_code, const std::string& command_line) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Time every scorer x stage over a grid and measure its attention shape.\n"
      "With no grid flags it runs scenarios/default.csv. Each Problem flag takes a value, a list (8,32,128),\n"
      "an arithmetic range (10:100:10, inclusive) or a geometric one (16:1024:*2); the grid is their product.\n"
      "Writes timing.csv, samples.csv, entropy.csv and meta.json to results/<scenario>/<UTC time>/ (or --out).");
  add_run_options(sub, o);
  o->command_line = command_line;
  sub->callback([o, &exit_code] { exit_code = run_sweep(sweep_options(*o)); });
}

}  // namespace attnbench
