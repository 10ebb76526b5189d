// `attnbench status DIR`: where the shards of a submitted run stand.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/status_report.hpp"
#include "driver/slurm_plan.hpp"

namespace attnbench {

namespace {

constexpr std::size_t kLogTailLines = 5;

std::string slurm_column(const std::string& job, const std::string& state, const std::string& reason) {
  if (job.empty()) return "-";
  return job + " " + (state.empty() ? "(unknown to Slurm)" : state) + (reason.empty() ? "" : " (" + reason + ")");
}

struct StatusOptions {
  std::string dir;
};

int run_status(const StatusOptions& o) {
  print_run_state(read_run_state(o.dir), std::cout);
  return 0;
}

}  // namespace

void print_run_state(const RunState& run, std::ostream& out) {
  const std::string run_status = run.meta.value("status", std::string("unknown"));
  const std::size_t points = run.meta.contains("grid") && run.meta["grid"].is_array() ? run.meta["grid"].size() : 0;
  out << "run " << run.dir.string() << ": " << run.shard_count << " shards of " << points << " points; status "
      << run_status
      << (run.slurm_answered ? "" : "; Slurm did not answer (squeue, sacct): states from the shard folders") << "\n";
  const bool train = run.meta.contains("slurm") && run.meta["slurm"].value("sweep", std::string()) == "train";
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %-8s %-50s %-12s %8s\n", "shard", "state", "slurm job", "folder", "rows");
  out << line;
  std::size_t rows = 0;
  for (const ShardState& s : run.shards) {
    const std::string name = std::to_string(s.index) + "/" + std::to_string(run.shard_count);
    std::snprintf(line, sizeof line, "%-8s %-8s %-50s %-12s %8zu\n", name.c_str(), to_string(s.verdict),
                  slurm_column(s.job, s.slurm_state, s.slurm_reason).c_str(), s.folder_status.c_str(), s.rows);
    out << line;
    rows += s.rows;
  }
  if (!run.merge.job.empty()) {
    std::snprintf(line, sizeof line, "%-8s %-8s %-50s\n", "merge", "",
                  slurm_column(run.merge.job, run.merge.slurm_state, run.merge.slurm_reason).c_str());
    out << line;
  }
  out << "shards done " << run.count(ShardVerdict::done) << ", running " << run.count(ShardVerdict::running)
      << ", pending " << run.count(ShardVerdict::pending) << ", failed " << run.count(ShardVerdict::failed)
      << (train ? "; trainings finished so far " : "; timing rows so far ") << rows << "\n";
  for (const ShardState& s : run.shards) {
    if (s.verdict != ShardVerdict::failed) continue;
    const std::vector<std::string> tail = tail_lines(s.log, kLogTailLines);
    out << "shard " << s.index << "/" << run.shard_count << " failed"
        << (s.slurm_state.empty() ? "" : " (" + s.slurm_state + ")");
    if (tail.empty()) {
      out << "; no Slurm output" << (s.log.empty() ? "" : " at " + s.log.string()) << "\n";
      continue;
    }
    out << "; the end of " << s.log.string() << ":\n";
    for (const std::string& text : tail) out << "  | " << text << "\n";
  }
  if (run.merge.slurm_state == "FAILED" || run.merge.slurm_state == "CANCELLED") {
    out << "merge job " << run.merge.job << " " << run.merge.slurm_state << "; the end of " << run.merge.log.string()
        << ":\n";
    for (const std::string& text : tail_lines(run.merge.log, kLogTailLines)) out << "  | " << text << "\n";
  }
  if (run_status == "complete")
    out << "merged: " << run.dir.string() << " holds the whole run\n";
  else if (run.count(ShardVerdict::failed) > 0)
    out << "resume with: attnbench submit --resume " << run.dir.string() << "\n";
}

void setup_status(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StatusOptions>();
  CLI::App* sub = app.add_subcommand(
      "status", "Where the shards of a run from `attnbench submit` stand: done, running, pending, failed; rows so far");
  sub->add_option("dir", o->dir, "The run folder `attnbench submit` printed")->required();
  sub->callback([o, &exit_code] { exit_code = run_status(*o); });
}

}  // namespace attnbench
