#include "driver/slurm_status.hpp"

#include <algorithm>
#include <deque>
#include <fstream>
#include <stdexcept>

#include "driver/folder_kind.hpp"
#include "driver/folder_lock.hpp"
#include "driver/meta_check.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_journal.hpp"
#include "driver/slurm_plan.hpp"

namespace attnbench {

namespace {

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return nlohmann::json();
  nlohmann::json value = nlohmann::json::parse(in, nullptr, false);
  return value.is_discarded() ? nlohmann::json() : value;
}

// Data rows of a folder's file of finished rows (finished_rows_file: timing.csv, or a train
// folder's train_final.csv) that its journal commits: the committed lines less the header
// (rows are appended whole, one a line; a quoted cell holds no newline). A tail no record
// commits (a shard killed mid-append) is not counted, nor is anything of a damaged folder.
std::size_t data_rows(const std::filesystem::path& folder, FolderKind kind) {
  if (!std::filesystem::exists(folder / finished_rows_file(kind))) return 0;
  std::string text;
  try {
    text = committed_text(folder, finished_rows_file(kind));
  } catch (const std::exception&) {  // damaged, or a journal of another kind: nothing counts
    return 0;
  }
  const auto lines = std::count(text.begin(), text.end(), '\n');
  return lines > 0 ? static_cast<std::size_t>(lines - 1) : 0;
}

// The latest submission that sent shard k (its array job id), or null.
std::string latest_array_job(const nlohmann::json& submissions, int k) {
  for (auto it = submissions.rbegin(); it != submissions.rend(); ++it) {
    const nlohmann::json& shards = it->value("shards", nlohmann::json::array());
    if (std::find(shards.begin(), shards.end(), k) != shards.end() && it->value("array_job", nlohmann::json()).is_string())
      return (*it)["array_job"].get<std::string>();
  }
  return "";
}

ShardVerdict verdict_of(const ShardState& s, bool slurm_answered) {
  if (s.folder_status == "complete") return ShardVerdict::done;
  if (slurm_answered) {
    if (s.slurm_state == "PENDING" || s.slurm_state == "REQUEUED") return ShardVerdict::pending;
    if (slurm_state_active(s.slurm_state)) return ShardVerdict::running;
    return ShardVerdict::failed;  // ended (or forgotten by Slurm) without a complete folder
  }
  if (s.folder_status == "running") return ShardVerdict::running;
  return s.folder_status == "missing" ? ShardVerdict::pending : ShardVerdict::failed;
}

}  // namespace

const char* to_string(ShardVerdict verdict) {
  switch (verdict) {
    case ShardVerdict::done: return "done";
    case ShardVerdict::running: return "running";
    case ShardVerdict::pending: return "pending";
    case ShardVerdict::failed: return "failed";
  }
  return "?";
}

std::size_t RunState::count(ShardVerdict verdict) const {
  return static_cast<std::size_t>(
      std::count_if(shards.begin(), shards.end(), [&](const ShardState& s) { return s.verdict == verdict; }));
}

RunState read_run_state(const std::filesystem::path& dir) {
  RunState run;
  run.dir = dir;
  const std::filesystem::path meta_path = dir / "meta.json";
  if (!std::filesystem::exists(meta_path))
    throw std::invalid_argument(meta_path.string() + ": not found; give the folder `attnbench submit` printed");
  run.meta = read_json(meta_path);
  if (!run.meta.is_object() || !run.meta.contains("slurm"))
    throw std::invalid_argument(meta_path.string() + ": not a run made by `attnbench submit` (no \"slurm\" entry)");
  check_slurm_run_meta(run.meta, meta_path.string());
  const nlohmann::json& slurm = run.meta["slurm"];
  const nlohmann::json submissions = slurm.value("submissions", nlohmann::json::array());
  run.shard_count = slurm.value("shards", 0);

  std::vector<std::string> jobs;
  for (const nlohmann::json& s : submissions)
    for (const char* key : {"array_job", "merge_job"})
      if (s.value(key, nlohmann::json()).is_string()) jobs.push_back(s[key].get<std::string>());
  const auto states = slurm_job_states(jobs);
  run.slurm_answered = states.has_value();
  const auto lookup = [&](const std::string& id, std::string& state, std::string& reason) {
    if (!states || id.empty()) return;
    if (const auto found = states->find(id); found != states->end()) {
      state = found->second.state;
      reason = found->second.reason;
    }
  };

  const std::filesystem::path logs = dir / "slurm" / "logs";
  for (int k = 1; k <= run.shard_count; ++k) {
    ShardState s;
    s.index = k;
    const std::string array_job = latest_array_job(submissions, k);
    if (!array_job.empty()) {
      s.job = array_job + "_" + std::to_string(k);
      s.log = logs / ("shard-" + std::to_string(k) + "-" + array_job + ".out");
    }
    lookup(s.job, s.slurm_state, s.slurm_reason);
    const std::filesystem::path folder = shard_dir(dir, k);
    const nlohmann::json shard_meta = read_json(folder / "meta.json");
    s.folder_status = shard_meta.is_object() ? "unknown" : "missing";
    if (shard_meta.is_object() && shard_meta.contains("status") && shard_meta["status"].is_string())
      s.folder_status = shard_meta["status"].get<std::string>();
    s.rows = data_rows(folder, folder_kind(shard_meta));
    s.verdict = verdict_of(s, run.slurm_answered);
    run.shards.push_back(s);
  }
  if (!submissions.empty() && submissions.back().value("merge_job", nlohmann::json()).is_string()) {
    run.merge.job = submissions.back()["merge_job"].get<std::string>();
    run.merge.log = logs / ("merge-" + run.merge.job + ".out");
    lookup(run.merge.job, run.merge.slurm_state, run.merge.slurm_reason);
  }
  return run;
}

std::vector<std::string> tail_lines(const std::filesystem::path& file, std::size_t lines) {
  std::ifstream in(file);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  return {last.begin(), last.end()};
}

void write_run_meta(const std::filesystem::path& dir, const nlohmann::json& meta) {
  const FolderLock lock(dir, FolderLock::Wait::yes);  // after a merge writing there has ended
  write_file_atomically(dir / "meta.json", meta.dump(2) + "\n");
}

}  // namespace attnbench
