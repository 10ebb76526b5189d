// `attnbench run`: a sweep over a grid (from flags or a scenario file) into a run folder.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/problem_flags.hpp"
#include "cli/source_paths.hpp"
#include "cli/sweep_plan.hpp"
#include "driver/folder_kind.hpp"
#include "driver/grid_json.hpp"
#include "driver/meta_file.hpp"
#include "driver/run_folder.hpp"
#include "driver/scenario.hpp"
#include "driver/sweep.hpp"
#include "driver/sweep_plan.hpp"

namespace attnbench {

namespace {

struct RunOptions {
  std::map<std::string, std::string> specs;  // grid flags given, by field
  std::string scenario, out, resume, shard = "1/1";
  std::string roofline;  // empty: results/machine.json
  // The run settings given as flags, by setting name ("min_time" for --min-time); they
  // override every scenario row's. Unset: the row's, else the default.
  std::map<std::string, std::string> settings;
  bool force = false, dry_run = false, quiet = false;
  std::optional<double> max_memory_gib;  // unset: 75% of MemAvailable
  std::string command_line;
};

// The command that starts the peer `name` (only "torch" exists: scripts/peer_torch.py on ATTNBENCH_PYTHON).
PeerCommand peer_command(const std::string& name) {
  if (name != "torch") throw std::invalid_argument("--peer: unknown peer '" + name + "'; known: torch");
  return {ATTNBENCH_PYTHON, project_root() / "scripts" / "peer_torch.py"};
}

// The grid the flags or the scenario describe, each point with its settings (the flags win).
void plan_new_run(const RunOptions& o, SweepOptions& s) {
  apply_setting_flags(s.grid, o.settings);  // checks the flags before anything else
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
    Scenario scenario = load_scenario(file, defaults);
    s.grid = std::move(scenario.grid);
    s.scenario = file.stem().string();
    s.scenario_files = std::move(scenario.files);
  }
  apply_setting_flags(s.grid, o.settings);
  s.out_dir = o.out.empty() ? default_run_dir(project_root() / "results", s.scenario) : std::filesystem::path(o.out);
}

// The run a meta.json planned, as it was planned.
void plan_resumed_run(const RunOptions& o, SweepOptions& s) {
  if (!o.specs.empty() || !o.scenario.empty() || !o.out.empty() || !o.settings.empty())
    throw std::invalid_argument(
        "--resume: continues the run as it was planned; drop the grid flags, --scenario, --out, --stages, "
        "--repetitions, --min-time and --peer");
  try {
    s.resumed = read_run_meta(o.resume);
    if (folder_kind(*s.resumed) == FolderKind::train)
      throw std::invalid_argument(o.resume + " holds a `train` run; continue it with `" +
                                  resume_command(FolderKind::train) + " " + o.resume + "`");
    s.grid = grid_from_meta(*s.resumed);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--resume: ") + e.what());
  }
  s.out_dir = o.resume;
  s.scenario = s.resumed->value("scenario", "custom");
  if (s.resumed->contains("shard")) std::tie(s.shard_index, s.shard_count) = parse_shard((*s.resumed)["shard"]);
}

SweepOptions sweep_options(const RunOptions& o) {
  SweepOptions s;
  s.command_line = o.command_line;
  s.force = o.force;
  s.dry_run = o.dry_run;
  s.quiet = o.quiet;
  if (o.max_memory_gib && !(*o.max_memory_gib > 0 && std::isfinite(*o.max_memory_gib)))
    throw std::invalid_argument("--max-memory: must be a positive number of GiB, got " + std::to_string(*o.max_memory_gib));
  constexpr double kMaxGib = 1e9;  // 10^9 GiB: far beyond any machine, still a 64-bit byte count
  s.max_memory_bytes = o.max_memory_gib ? static_cast<std::uint64_t>(std::min(*o.max_memory_gib, kMaxGib) * 1073741824.0)
                                        : available_memory_bytes() / 4 * 3;
  std::tie(s.shard_index, s.shard_count) = parse_shard(o.shard);
  s.machine_json = o.roofline.empty() ? project_root() / "results" / "machine.json" : std::filesystem::path(o.roofline);
  if (o.resume.empty())
    plan_new_run(o, s);
  else
    plan_resumed_run(o, s);
  for (const GridPoint& point : s.grid)
    if (!point.settings.peer.empty()) s.peer = peer_command(point.settings.peer);
  for (const GridPoint& point : s.grid) {
    const std::vector<std::string>& stages = point.settings.bench.stages;
    if (point.problem.dtype != DType::f32 && std::find(stages.begin(), stages.end(), "train_step") != stages.end())
      throw std::invalid_argument("--stages: train_step trains in f32 only; the grid has --dtype " +
                                  to_string(point.problem.dtype));
  }
  return s;
}

// Adds run's flags to `sub`, storing into `o`.
void add_run_options(CLI::App* sub, const std::shared_ptr<RunOptions>& o) {
  add_grid_flags(*sub, o->specs);
  sub->add_option("--scenario", o->scenario, "Scenario name in scenarios/ or a CSV path (default: default)");
  sub->add_option("--out", o->out, "Run folder to write (default results/<scenario>/<UTC timestamp>)");
  sub->add_option("--resume", o->resume, "Continue the run in this folder, skipping the points it holds");
  sub->add_flag("--force", o->force, "With --resume: continue a run made on another machine, oneDNN or commit");
  sub->add_option("--roofline", o->roofline,
                  "The machine's peaks for roofline_pct and bound, from `attnbench roofline` (default "
                  "results/machine.json, when it exists)")
      ->check(CLI::ExistingFile);
  const auto setting = [&](const char* flag, const std::string& name, const char* help) {
    sub->add_option_function<std::string>(flag, [o, name](const std::string& text) { o->settings[name] = text; },
                                          help);
  };
  setting("--repetitions", "repetitions", "Repetitions per scorer x stage (default 5, or the scenario row's)");
  setting("--min-time", "min_time", "Seconds each repetition runs at least (default 0.05, or the scenario row's)");
  sub->add_option("--max-memory", o->max_memory_gib,
                  "GiB a point may use; larger points get a skipped row (default: 75% of MemAvailable)");
  setting("--stages", "stages",
          "Comma list of the stages to time and write (default: keys,score,attend,step,cell,output,encoder,"
          "decode, or the scenario row's; train_step, one training step on one batch, only when named)");
  setting("--peer", "peer",
          "Also time every point with a peer, interleaved, its rows in the same files: torch (PyTorch eager, "
          "scripts/peer_torch.py; once per point whatever its impl), or none (default, or the scenario row's)");
  sub->add_flag("--dry-run", o->dry_run, "List the points with memory and time estimates; run nothing");
  sub->add_option("--shard", o->shard, "Run shard K of N (every N-th point from K); join with `attnbench merge`")
      ->capture_default_str();
  sub->add_flag("--quiet", o->quiet, "No progress line on stderr");
}

}  // namespace

SweepPlan plan_run_sweep(const std::vector<std::string>& args, int shards) {
  const SweepOptions s = sweep_options(*parse_sweep_flags<RunOptions>("run", args, add_run_options));
  return {s.scenario, grid_to_json(s.grid), s.grid.size(),
          shard_needs(s.grid, s.max_memory_bytes, shards)};
}

void setup_run(CLI::App& app, int& exit_code, const std::string& command_line) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Time every scorer x stage over a grid and measure its attention shape.\n"
      "With no grid flags it runs scenarios/default.csv. Each Problem flag takes a value, a list (8,32,128),\n"
      "an arithmetic range (10:100:10, inclusive) or a geometric one (16:1024:*2); the grid is their product.\n"
      "--stages, --repetitions, --min-time and --peer, when given, override every scenario row's setting.\n"
      "Writes timing.csv, samples.csv, entropy.csv and meta.json to results/<scenario>/<UTC time>/ (or --out).");
  add_run_options(sub, o);
  o->command_line = command_line;
  sub->callback([o, &exit_code] { exit_code = run_sweep(sweep_options(*o)); });
}

}  // namespace attnbench
