// `attnbench submit --slurm`: a sweep as a Slurm job array of shards plus a merge job;
// `submit --resume DIR` sends again the shards that did not finish, then the merge.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "cli/status_report.hpp"
#include "cli/sweep_plan.hpp"
#include "cli/source_paths.hpp"
#include "driver/progress.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_meta.hpp"
#include "driver/slurm_client.hpp"
#include "driver/slurm_plan.hpp"
#include "driver/slurm_status.hpp"

namespace attnbench {

const std::vector<SweepCommand>& sweep_commands() {
  static const std::vector<SweepCommand> commands = {
      {"run", plan_run_sweep},
      {"train", plan_train_sweep},
  };
  return commands;
}

namespace {

constexpr auto kPollInterval = std::chrono::seconds(2);

struct SubmitOptions {
  bool slurm = false, wait = false, allow_mixed = false;
  std::optional<int> shards, array_parallel;
  std::string out, resume, sweep = "run", partition, account, time;
  std::vector<std::string> sbatch_args;
  std::vector<std::string> sweep_args;  // every flag submit does not know: the sweep's own
  std::string command_line;
};

const SweepCommand& sweep_command(const std::string& name) {
  for (const SweepCommand& command : sweep_commands())
    if (command.name == name) return command;
  std::string known;
  for (const SweepCommand& command : sweep_commands()) known += (known.empty() ? "" : ", ") + std::string(command.name);
  throw std::invalid_argument("--sweep: unknown sweep '" + name + "'; known: " + known);
}

// The sweep's flags, less those submit sets for every shard itself.
std::vector<std::string> checked_sweep_args(const std::vector<std::string>& args) {
  std::vector<std::string> kept;
  for (const std::string& arg : args) {
    const std::string flag = arg.substr(0, arg.find('='));
    if (flag == "--shard" || flag == "--force")
      throw std::invalid_argument(flag + ": submit sets it for each shard; give --shards N (and --resume DIR to continue)");
    if (flag == "--dry-run")
      throw std::invalid_argument("--dry-run: submit has none; `attnbench run --dry-run` (or train) with the same flags plans the sweep");
    if (flag != "--quiet") kept.push_back(arg);
  }
  return kept;
}

// "--array=1-3%2": the tasks `shards` with at most `parallel` at once.
std::string array_flag(const std::vector<int>& shards, std::optional<int> parallel) {
  bool contiguous = true;
  for (std::size_t i = 1; i < shards.size(); ++i) contiguous = contiguous && shards[i] == shards[i - 1] + 1;
  const std::string range = contiguous && shards.size() > 1
                                ? std::to_string(shards.front()) + "-" + std::to_string(shards.back())
                                : fmt::format("{}", fmt::join(shards, ","));
  return "--array=" + range + (parallel ? "%" + std::to_string(*parallel) : "");
}

// Submits the array of `shards` (none: the merge alone) and the merge job after it,
// `extra_args` on both sbatch command lines (they override the scripts' #SBATCH lines);
// returns the submission entry for meta.json. When the merge cannot be submitted the
// array is cancelled again. Throws SlurmError with sbatch's message.
nlohmann::json submit_jobs(const std::filesystem::path& dir, const std::vector<int>& shards,
                           std::optional<int> parallel, const std::vector<std::string>& extra_args = {}) {
  nlohmann::json entry = {{"utc", utc_now()}, {"shards", shards}, {"array_job", nullptr}, {"merge_job", nullptr}};
  if (!extra_args.empty()) entry["sbatch_args"] = extra_args;
  std::vector<std::string> merge_args = extra_args;
  if (!shards.empty()) {
    std::vector<std::string> array_args = extra_args;
    array_args.push_back(array_flag(shards, parallel));
    try {
      entry["array_job"] = sbatch(array_args, dir / "slurm" / "shards.sbatch");
    } catch (const SlurmError& e) {
      throw SlurmError(std::string("sbatch refused the shards' job array: ") + e.what());
    }
    merge_args.push_back("--dependency=afterok:" + entry["array_job"].get<std::string>());
  }
  try {
    entry["merge_job"] = sbatch(merge_args, dir / "slurm" / "merge.sbatch");
  } catch (const SlurmError& e) {
    if (!shards.empty()) scancel({entry["array_job"].get<std::string>()});
    throw SlurmError(std::string("sbatch refused the merge job: ") + e.what());
  }
  return entry;
}

void print_submitted(const std::filesystem::path& dir, const nlohmann::json& entry, int shard_count) {
  const std::vector<int> shards = entry["shards"];
  if (entry["array_job"].is_string())
    std::cout << "submitted shards " << fmt::format("{}", fmt::join(shards, ",")) << " of " << shard_count << ": job array "
              << entry["array_job"].get<std::string>() << "\n";
  std::cout << "merge job " << entry["merge_job"].get<std::string>()
            << (entry["array_job"].is_string() ? " runs after every shard succeeded" : " submitted") << "\n"
            << "run folder: " << dir.string() << "\n"
            << "follow with: attnbench status " << dir.string() << "   (or squeue -j "
            << (entry["array_job"].is_string() ? entry["array_job"].get<std::string>() + "," : "")
            << entry["merge_job"].get<std::string>() << ")\n";
}

// Waits until the merge job of the latest submission has ended; 0 when the merged run
// is complete. A merge job that can never start (a shard failed) is cancelled.
int wait_for_merge(const std::filesystem::path& dir) {
  std::string last;
  while (true) {
    const RunState run = read_run_state(dir);
    if (run.meta.value("status", "") == "complete") {
      std::cout << "merged run complete: " << dir.string() << "\n";
      return 0;
    }
    const std::string progress = "shards done " + std::to_string(run.count(ShardVerdict::done)) + ", running " +
                                 std::to_string(run.count(ShardVerdict::running)) + ", pending " +
                                 std::to_string(run.count(ShardVerdict::pending)) + ", failed " +
                                 std::to_string(run.count(ShardVerdict::failed));
    if (progress != last) std::cerr << "attnbench: " << progress << "\n";
    last = progress;
    const bool merge_ended = run.slurm_answered && !slurm_state_active(run.merge.slurm_state);
    const bool merge_blocked = run.merge.slurm_reason == "DependencyNeverSatisfied";
    if (merge_ended || merge_blocked) {
      if (merge_blocked) scancel({run.merge.job});
      // The merge may have finished between reading meta.json and asking Slurm.
      if (read_run_state(dir).meta.value("status", "") == "complete") {
        std::cout << "merged run complete: " << dir.string() << "\n";
        return 0;
      }
      print_run_state(read_run_state(dir), std::cerr);
      std::cerr << "attnbench: the run is not complete"
                << (merge_blocked ? " (a shard failed, so the merge job " + run.merge.job + " was cancelled)"
                                  : " (merge job " + run.merge.job + " ended " +
                                        (run.merge.slurm_state.empty() ? "unseen" : run.merge.slurm_state) + ")")
                << "; continue with: attnbench submit --resume " << dir.string() << "\n";
      return 1;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void require_sbatch() {
  if (find_on_path("sbatch").empty())
    throw std::invalid_argument("--slurm: sbatch not found on PATH; submit from a Slurm login node (slurm-client)");
}

int submit_new(const SubmitOptions& o) {
  if (!o.slurm) throw std::invalid_argument("submit: say where to run: --slurm (the one scheduler supported)");
  if (!o.shards) throw std::invalid_argument("--shards: required; how many array tasks to split the sweep in");
  const SweepCommand& command = sweep_command(o.sweep);
  const std::vector<std::string> args = checked_sweep_args(o.sweep_args);
  const SweepPlan plan = command.plan(args, *o.shards);
  if (static_cast<std::size_t>(*o.shards) > plan.points)
    throw std::invalid_argument("--shards " + std::to_string(*o.shards) + ": more shards than the grid's " +
                                std::to_string(plan.points) + " points");
  const std::filesystem::path dir = std::filesystem::absolute(
      o.out.empty() ? default_run_dir(project_root() / "results", plan.scenario) : std::filesystem::path(o.out));
  if (std::filesystem::exists(dir))
    throw std::invalid_argument("--out " + dir.string() +
                                ": already exists; choose a new folder (continue a submitted run with --resume)");
  require_sbatch();

  SlurmScripts scripts;
  scripts.run_dir = dir;
  scripts.attnbench = std::filesystem::read_symlink("/proc/self/exe");
  scripts.sweep_command = std::string(command.name);
  scripts.sweep_args = args;
  scripts.shards = *o.shards;
  scripts.resources = resources_for(plan.shards);
  scripts.time = o.time;
  scripts.partition = o.partition;
  scripts.account = o.account;
  scripts.job_name = "attnbench-" + plan.scenario;
  scripts.sbatch_args = o.sbatch_args;
  scripts.allow_mixed = o.allow_mixed;

  std::error_code error;
  std::filesystem::create_directories(dir / "slurm" / "logs", error);
  if (error) throw std::invalid_argument("--out " + dir.string() + ": cannot create it (" + error.message() + ")");
  nlohmann::json meta;
  try {
    std::filesystem::create_directories(dir / "shards");
    write_file_atomically(dir / "slurm" / "shards.sbatch", shard_script(scripts));
    write_file_atomically(dir / "slurm" / "merge.sbatch", merge_script(scripts));
    meta = {{"status", "submitting"},
            {"command", o.command_line},
            {"scenario", plan.scenario},
            {"grid", plan.grid},
            {"points", plan.points},
            {"slurm",
             {{"command", o.command_line},
              {"sweep", scripts.sweep_command},
              {"sweep_args", args},
              {"shards", scripts.shards},
              {"cpus_per_task", scripts.resources.cpus_per_task},
              {"mem_mib", scripts.resources.mem_mib},
              {"time", o.time.empty() ? std::to_string(scripts.resources.time_minutes) : o.time},
              {"partition", o.partition},
              {"account", o.account},
              {"array_parallel", o.array_parallel ? nlohmann::json(*o.array_parallel) : nlohmann::json(nullptr)},
              {"sbatch_args", o.sbatch_args},
              {"allow_mixed", o.allow_mixed},
              {"submissions", nlohmann::json::array()}}}};
    write_run_meta(dir, meta);
    std::vector<int> all;
    for (int k = 1; k <= scripts.shards; ++k) all.push_back(k);
    const nlohmann::json entry = submit_jobs(dir, all, o.array_parallel);
    meta["status"] = "submitted";
    meta["slurm"]["submissions"].push_back(entry);
    write_run_meta(dir, meta);
    std::cout << "plan: " << plan.points << (scripts.sweep_command == "train" ? " trainings" : " points") << " in " << scripts.shards << " shards; each task asks for "
              << scripts.resources.cpus_per_task << " CPU(s), " << scripts.resources.mem_mib << " MiB, "
              << meta["slurm"]["time"].get<std::string>() << (o.time.empty() ? " minutes" : "") << "\n";
    for (std::size_t k = 0; k < plan.shards.size(); ++k) {
      char memory[32];
      std::snprintf(memory, sizeof memory, "%.3g", static_cast<double>(plan.shards[k].memory_bytes) / (1 << 30));
      std::cout << "  shard " << k + 1 << "/" << plan.shards.size() << ": " << plan.shards[k].points
                << " points, about " << format_duration(plan.shards[k].seconds) << ", largest point " << memory
                << " GiB\n";
    }
    print_submitted(dir, entry, scripts.shards);
  } catch (const SlurmError& e) {  // nothing was submitted: leave nothing behind
    std::filesystem::remove_all(dir, error);
    throw std::invalid_argument(std::string(o.partition.empty() ? "submit" : "--partition " + o.partition) + ": " +
                                e.what());
  } catch (...) {
    std::filesystem::remove_all(dir, error);
    throw;
  }
  return o.wait ? wait_for_merge(dir) : 0;
}

int submit_resume(const SubmitOptions& o) {
  if (o.shards || !o.out.empty() || !o.partition.empty() || !o.account.empty() || !o.time.empty() ||
      !o.sweep_args.empty() || o.allow_mixed)
    throw std::invalid_argument(
        "--resume: continues the run as it was submitted; give only --wait, --array-parallel and --sbatch-arg");
  const std::filesystem::path dir = std::filesystem::absolute(o.resume);
  RunState run = read_run_state(dir);
  if (run.meta.value("status", "") == "complete") {
    std::cout << "the run in " << dir.string() << " is complete; nothing to submit\n";
    return 0;
  }
  require_sbatch();
  std::vector<int> redo;
  for (const ShardState& s : run.shards) {
    if (s.verdict == ShardVerdict::running || s.verdict == ShardVerdict::pending)
      throw std::invalid_argument("--resume " + dir.string() + ": shard " + std::to_string(s.index) + " is still " +
                                  to_string(s.verdict) + " (job " + s.job +
                                  "); wait for it, or scancel it, then resume");
    if (s.verdict == ShardVerdict::failed) redo.push_back(s.index);
  }
  if (slurm_state_active(run.merge.slurm_state)) {
    if (run.merge.slurm_state != "PENDING")
      throw std::invalid_argument("--resume " + dir.string() + ": its merge job " + run.merge.job + " is " +
                                  run.merge.slurm_state + "; wait for it");
    if (const std::string failed = scancel({run.merge.job}); !failed.empty())
      throw std::invalid_argument("--resume: cannot cancel the old merge job " + run.merge.job + ": " + failed);
  }
  std::optional<int> parallel = o.array_parallel;
  if (!parallel && run.meta["slurm"].value("array_parallel", nlohmann::json()).is_number())
    parallel = run.meta["slurm"]["array_parallel"].get<int>();
  nlohmann::json entry;
  try {
    entry = submit_jobs(dir, redo, parallel, o.sbatch_args);
  } catch (const SlurmError& e) {
    throw std::invalid_argument(std::string("--resume: ") + e.what());
  }
  nlohmann::json meta = read_run_state(dir).meta;
  meta["status"] = "submitted";
  meta["slurm"]["submissions"].push_back(entry);
  write_run_meta(dir, meta);
  print_submitted(dir, entry, run.shard_count);
  return o.wait ? wait_for_merge(dir) : 0;
}

}  // namespace

void setup_submit(CLI::App& app, int& exit_code, const std::string& command_line) {
  auto o = std::make_shared<SubmitOptions>();
  CLI::App* sub = app.add_subcommand(
      "submit",
      "Run a sweep on a Slurm cluster: a job array whose task K runs `attnbench run --shard K/N` (or `train`\n"
      "with --sweep train; every flag of the sweep given here is passed on), then a merge job (afterok) that\n"
      "joins the shards into --out.\nThe run folder holds meta.json (status, grid, job ids), slurm/*.sbatch, slurm/logs, shards/K.\n"
      "Follow with `attnbench status DIR`; continue a run whose shards failed with `submit --resume DIR`.");
  sub->allow_extras();
  sub->add_flag("--slurm", o->slurm, "Submit to Slurm with sbatch (the one scheduler supported)");
  sub->add_option("--shards", o->shards, "Number of shards: array tasks 1..N")->check(CLI::Range(1, 100000));
  sub->add_option("--out", o->out, "Run folder to create (default results/<scenario>/<UTC timestamp>)");
  sub->add_option("--resume", o->resume, "Resubmit the shards of this run folder that are missing or incomplete");
  std::string sweeps;
  for (const SweepCommand& command : sweep_commands()) sweeps += (sweeps.empty() ? "" : ", ") + std::string(command.name);
  sub->add_option("--sweep", o->sweep, "The sweep subcommand each shard runs: " + sweeps)->capture_default_str();
  sub->add_option("--partition", o->partition, "Slurm partition (sbatch --partition)");
  sub->add_option("--account", o->account, "Slurm account (sbatch --account)");
  sub->add_option("--time", o->time, "Time limit per task, in a form sbatch takes (default: 3x the estimate + 10 min)");
  sub->add_option("--array-parallel", o->array_parallel, "At most K shards at once (--array=1-N%K)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--sbatch-arg", o->sbatch_args,
                  "One more sbatch option for every job, e.g. --sbatch-arg=--qos=low (with --resume: for the jobs "
                  "it sends, e.g. --sbatch-arg=--nodelist=NODE)")
      ->allow_extra_args(false);
  sub->add_flag("--wait", o->wait, "Block until the merge job has ended; exit 0 only when the merged run is complete");
  sub->add_flag("--allow-mixed", o->allow_mixed, "Let the merge join shards measured on different CPU models");
  o->command_line = command_line;
  sub->callback([o, sub, &exit_code] {
    o->sweep_args = sub->remaining();
    exit_code = o->resume.empty() ? submit_new(*o) : submit_resume(*o);
  });
}

}  // namespace attnbench
