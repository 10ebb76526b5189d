#include "driver/slurm_client.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

extern char** environ;

namespace attnbench {

namespace {

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

std::string read_all(FILE* file) {
  std::string text;
  std::rewind(file);
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
  return parts;
}

// The message of a failed client: its stderr lines joined on one line.
std::string one_line(const ProcessResult& r) {
  std::string text;
  for (const std::string& line : lines_of(r.err.empty() ? r.out : r.err)) text += (text.empty() ? "" : "; ") + line;
  return text.empty() ? "exit code " + std::to_string(r.exit_code) : text;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv) {
  ProcessResult result;
  File out(std::tmpfile(), std::fclose), err(std::tmpfile(), std::fclose);
  if (!out || !err) return {127, "", "cannot create a temporary file"};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fileno(out.get()), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fileno(err.get()), STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return {127, "", argv[0] + ": cannot start: " + std::strerror(spawned)};
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_all(out.get());
  result.err = read_all(err.get());
  return result;
}

std::filesystem::path find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (const std::string& dir : split(path ? path : "", ':')) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(candidate)) return candidate;
  }
  return {};
}

std::string sbatch(const std::vector<std::string>& args, const std::filesystem::path& script) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(script.string());
  const ProcessResult r = run_process(argv);
  const std::vector<std::string> out = lines_of(r.out);
  if (r.exit_code != 0 || out.empty()) throw SlurmError(one_line(r));
  return split(out.back(), ';').front();  // "--parsable" prints "id" or "id;cluster"
}

std::optional<std::map<std::string, SlurmJobState>> slurm_job_states(const std::vector<std::string>& job_ids) {
  std::map<std::string, SlurmJobState> states;
  if (job_ids.empty()) return states;
  const ProcessResult acct =
      run_process({"sacct", "--noheader", "--parsable2", "--allocations", "--jobs", fmt::format("{}", fmt::join(job_ids, ",")),
                   "--format", "JobID,State"});
  if (acct.exit_code == 0) {
    for (const std::string& line : lines_of(acct.out)) {
      const std::vector<std::string> cells = split(line, '|');
      if (cells.size() < 2 || cells[0].find('[') != std::string::npos) continue;  // "12_[3-5]": not yet split
      states[cells[0]] = {split(cells[1], ' ').front(), ""};  // "CANCELLED by 0" -> CANCELLED
    }
  }
  const ProcessResult queue = run_process({"squeue", "--noheader", "--array", "--states=all", "--jobs",
                                           fmt::format("{}", fmt::join(job_ids, ",")), "--format=%F|%K|%i|%T|%r"});
  // squeue fails with "Invalid job id specified" when it knows none of the jobs any more.
  if (queue.exit_code != 0)
    return acct.exit_code == 0 || queue.err.find("Invalid job id") != std::string::npos
               ? std::optional(states)
               : std::nullopt;
  for (const std::string& line : lines_of(queue.out)) {
    const std::vector<std::string> cells = split(line, '|');
    if (cells.size() < 5) continue;
    const std::string id = cells[1] == "N/A" ? cells[2] : cells[0] + "_" + cells[1];
    SlurmJobState& state = states[id];
    if (state.state.empty() || slurm_state_active(cells[3])) state.state = cells[3];  // squeue knows the present
    state.reason = cells[4] == "None" ? "" : cells[4];
  }
  return states;
}

std::string scancel(const std::vector<std::string>& job_ids) {
  if (job_ids.empty()) return "";
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), job_ids.begin(), job_ids.end());
  const ProcessResult r = run_process(argv);
  return r.exit_code == 0 ? "" : one_line(r);
}

bool slurm_state_active(const std::string& state) {
  for (const char* active : {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED",
                             "STAGE_OUT", "SIGNALING", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
    if (state == active) return true;
  return false;
}

}  // namespace attnbench
