#include "driver/slurm_plan.hpp"

#include "driver/sweep_plan.hpp"

#include <algorithm>
#include <cmath>

#include "driver/estimate.hpp"
#include "driver/sweep.hpp"
#include "driver/sweep_plan.hpp"

namespace attnbench {

namespace {

constexpr double kMemoryMargin = 1.25;
constexpr std::uint64_t kProcessBytes = 512ull << 20;
constexpr double kTimeMargin = 3.0;
constexpr int kExtraMinutes = 10;

// "#SBATCH" lines every job of the run shares: partition, account, the extra arguments.
std::string common_directives(const SlurmScripts& s) {
  std::string text;
  if (!s.partition.empty()) text += "#SBATCH --partition=" + s.partition + "\n";
  if (!s.account.empty()) text += "#SBATCH --account=" + s.account + "\n";
  for (const std::string& arg : s.sbatch_args) text += "#SBATCH " + arg + "\n";
  return text;
}

// A value of an "#SBATCH" line: sbatch splits those at blanks unless double-quoted.
std::string directive_value(const std::string& value) {
  return value.find_first_of(" \t") == std::string::npos ? value : "\"" + value + "\"";
}

std::string quoted_words(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    text += ' ';
    text += shell_quote(word);
  }
  return text;
}

}  // namespace

std::vector<ShardNeeds> shard_needs(const Grid& grid, std::uint64_t max_memory, int count) {
  std::vector<ShardNeeds> shards;
  for (int k = 1; k <= count; ++k) {
    ShardNeeds needs;
    const Grid shard = shard_of(grid, k, count);
    const std::vector<double> estimates = point_estimates(shard);
    for (std::size_t i = 0; i < shard.size(); ++i) {
      ++needs.points;
      needs.threads = std::max(needs.threads, shard[i].problem.threads);
      const std::uint64_t bytes = point_memory_bytes(shard[i]);
      if (bytes > max_memory) continue;  // measured as a skipped row, in no time
      needs.memory_bytes = std::max(needs.memory_bytes, bytes);
      needs.seconds += estimates[i];
    }
    shards.push_back(needs);
  }
  return shards;
}

SlurmResources resources_for(const std::vector<ShardNeeds>& shards) {
  SlurmResources r;
  std::uint64_t memory = 0;
  double seconds = 0;
  for (const ShardNeeds& shard : shards) {
    r.cpus_per_task = std::max(r.cpus_per_task, shard.threads);
    memory = std::max(memory, shard.memory_bytes);
    seconds = std::max(seconds, shard.seconds);
  }
  const double bytes = static_cast<double>(memory) * kMemoryMargin + static_cast<double>(kProcessBytes);
  r.mem_mib = static_cast<std::uint64_t>(std::ceil(bytes / (1 << 20)));
  r.time_minutes = static_cast<int>(std::ceil(seconds * kTimeMargin / 60)) + kExtraMinutes;
  return r;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "_-+=/.,:@%*") == std::string::npos)
    return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::filesystem::path shard_dir(const std::filesystem::path& run_dir, int k) {
  return run_dir / "shards" / std::to_string(k);
}

std::string shard_script(const SlurmScripts& s) {
  const std::string n = std::to_string(s.shards), binary = shell_quote(s.attnbench.string());
  const std::string cpus = std::to_string(s.resources.cpus_per_task);
  std::string text = "#!/bin/bash\n";
  text += "# Written by `attnbench submit`: task K of this job array runs shard K/" + n + " of the sweep.\n";
  text += "#SBATCH --job-name=" + s.job_name + "\n";
  text += "#SBATCH --cpus-per-task=" + cpus + "\n";
  text += "#SBATCH --mem=" + std::to_string(s.resources.mem_mib) + "M\n";
  text += "#SBATCH --time=" + (s.time.empty() ? std::to_string(s.resources.time_minutes) : s.time) + "\n";
  text += "#SBATCH --output=" + directive_value((s.run_dir / "slurm" / "logs" / "shard-%a-%A.out").string()) + "\n";
  text += common_directives(s);
  text += "set -euo pipefail\n";
  text += "export OMP_NUM_THREADS=\"${SLURM_CPUS_PER_TASK:-" + cpus + "}\" OMP_PROC_BIND=close OMP_PLACES=cores\n";
  text += "K=\"$SLURM_ARRAY_TASK_ID\"\n";
  text += "SHARD=" + shell_quote(s.run_dir.string()) + "/shards/\"$K\"\n";
  text += "echo \"attnbench shard $K/" + n + " on $(hostname) (job ${SLURM_JOB_ID:-?})\"\n";
  text += "if [ -f \"$SHARD/meta.json\" ]; then\n";
  text += "  exec " + binary + " " + s.sweep_command + " --resume \"$SHARD\" --quiet\n";
  text += "fi\n";
  text += "exec " + binary + " " + s.sweep_command + quoted_words(s.sweep_args);
  text += " --shard \"$K/" + n + "\" --out \"$SHARD\" --quiet\n";
  return text;
}

std::string merge_script(const SlurmScripts& s) {
  std::string text = "#!/bin/bash\n";
  text += "# Written by `attnbench submit`: joins the shards into the run folder once every task succeeded.\n";
  text += "#SBATCH --job-name=" + s.job_name + "-merge\n";
  text += "#SBATCH --cpus-per-task=1\n#SBATCH --mem=1024M\n#SBATCH --time=30\n";
  text += "#SBATCH --output=" + directive_value((s.run_dir / "slurm" / "logs" / "merge-%j.out").string()) + "\n";
  text += common_directives(s);
  text += "set -euo pipefail\n";
  text += "exec " + shell_quote(s.attnbench.string()) + " merge";
  for (int k = 1; k <= s.shards; ++k) {
    text += ' ';
    text += shell_quote(shard_dir(s.run_dir, k).string());
  }
  text += " --out " + shell_quote(s.run_dir.string());
  if (s.allow_mixed) text += " --allow-mixed";
  return text + "\n";
}

}  // namespace attnbench
