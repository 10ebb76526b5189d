// The Slurm client commands attnbench uses (sbatch, squeue, sacct, scancel), run as
// child processes with their output captured. Slurm schedules; attnbench only asks.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnbench {

// What a finished child process left: its exit code (128 + signal when killed, 127 when
// it could not be started), its stdout and its stderr.
struct ProcessResult {
  int exit_code = 0;
  std::string out, err;
};

// Runs `argv` (argv[0] looked up on PATH) to the end with stdin from /dev/null.
ProcessResult run_process(const std::vector<std::string>& argv);

// The full path of `program` on PATH; empty when it is not there.
std::filesystem::path find_on_path(const std::string& program);

// sbatch (or another client) refused a request; what() is one line with Slurm's own
// message, e.g. "sbatch: error: Batch job submission failed: Invalid partition name specified".
class SlurmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Submits `script` with `sbatch --parsable ARGS... script`; returns the job id.
// Throws SlurmError with sbatch's message when it refuses.
std::string sbatch(const std::vector<std::string>& args, const std::filesystem::path& script);

// What Slurm says about one job or array task.
struct SlurmJobState {
  std::string state;   // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  std::string reason;  // squeue's reason, e.g. "DependencyNeverSatisfied"; empty from sacct
};

// The states of the jobs and array tasks of `job_ids`, keyed "JOB" or "JOB_TASK"
// ("12_3"): from sacct when accounting answers, else from `squeue --states=all`
// (which still lists jobs that ended in the last few minutes). Jobs neither knows are
// absent. Never throws: nullopt when neither sacct nor squeue answered.
std::optional<std::map<std::string, SlurmJobState>> slurm_job_states(const std::vector<std::string>& job_ids);

// Cancels jobs or array tasks ("12", "12_3"); returns scancel's error line, empty on success.
std::string scancel(const std::vector<std::string>& job_ids);

// True for states in which a job may still run: PENDING, RUNNING, CONFIGURING, ...
bool slurm_state_active(const std::string& state);

}  // namespace attnbench
