// A persistent child process spoken to in JSON lines: one request line on its stdin,
// one answer line on its stdout (how `attnbench run --peer` talks to its peer script).
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

// The child ended (or closed its stdout) before answering; what() says how it ended and
// the last line it wrote to stderr.
class PeerGone : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PeerProcess {
 public:
  // Starts argv[0] (an absolute path) with `argv`: its stdin and stdout are pipes to this
  // process, its stderr an anonymous temporary file (see last_error_line()). The child
  // ignores SIGINT and SIGTERM, which reach a whole terminal process group: the sweep
  // decides when to stop. It is killed when this process ends, however it ends.
  // Throws std::runtime_error when the pipes or the fork fail.
  explicit PeerProcess(const std::vector<std::string>& argv);

  // Closes the child's stdin (it is expected to end at end of input) and reaps it;
  // kills it when it is still there after two seconds.
  ~PeerProcess();

  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // Writes `message` as one line. Throws PeerGone when the child has gone.
  void send(const nlohmann::json& message);

  // Waits for the next line and parses it; signals do not cut the wait short. Throws
  // PeerGone at end of output and std::runtime_error when the line is not JSON.
  nlohmann::json receive();

  // The last non-empty line the child wrote to stderr, e.g.
  // "ModuleNotFoundError: No module named 'torch'"; empty when it wrote none.
  std::string last_error_line() const;

 private:
  // PeerGone saying how the child ended, with its last stderr line.
  PeerGone gone();

  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1, stderr_file_ = -1;
  std::string buffer_;  // bytes read from the child past the last whole line
};

}  // namespace attnbench
