#include "driver/peer_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace attnbench {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what + ": " + std::strerror(errno)); }

// Waits up to `timeout` for `pid` to end; true once it has been reaped (its status in `status`).
bool reaped(pid_t pid, std::chrono::milliseconds timeout, int& status) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return true;  // not our child any more: nothing to wait for
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + ::strsignal(WTERMSIG(status));
  return "ended";
}

// In the forked child: connects the pipes and execs; only async-signal-safe calls.
[[noreturn]] void become_child(char* const* argv, int in, int out, int err, pid_t parent) {
  if (::dup2(in, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(err, STDERR_FILENO) < 0) ::_exit(127);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, nullptr);
  ::sigaction(SIGTERM, &ignore, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent ended before prctl took effect
  ::execv(argv[0], argv);
  const char note[] = "cannot execute the peer's interpreter\n";
  (void)!::write(STDERR_FILENO, note, sizeof note - 1);
  ::_exit(127);
}

}  // namespace

PeerProcess::PeerProcess(const std::vector<std::string>& argv) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) fail("cannot create a pipe to the peer");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    fail("cannot create a pipe from the peer");
  }
  stderr_file_ = ::memfd_create("attnbench-peer-stderr", MFD_CLOEXEC);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  if (stderr_file_ >= 0) pid_ = ::fork();
  if (pid_ == 0) become_child(args.data(), in[0], out[1], stderr_file_, parent);
  const int error = errno;
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  if (pid_ < 0) {
    errno = error;
    ::close(to_child_);
    ::close(from_child_);
    if (stderr_file_ >= 0) ::close(stderr_file_);
    fail("cannot start the peer");
  }
}

PeerProcess::~PeerProcess() {
  ::close(to_child_);
  int status = 0;
  if (pid_ > 0 && !reaped(pid_, std::chrono::seconds(2), status)) {
    ::kill(pid_, SIGKILL);
    reaped(pid_, std::chrono::seconds(10), status);
  }
  ::close(from_child_);
  ::close(stderr_file_);
}

void PeerProcess::send(const nlohmann::json& message) {
  const std::string line = message.dump() + "\n";
  // SIGPIPE held back: writing to a child that has gone fails with EPIPE instead of ending this process.
  sigset_t pipe_signal, previous;
  ::sigemptyset(&pipe_signal);
  ::sigaddset(&pipe_signal, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_signal, &previous);
  int error = 0;
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(to_child_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = errno;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (error == EPIPE) {
    const timespec now{};
    ::sigtimedwait(&pipe_signal, nullptr, &now);  // take the pending SIGPIPE before unblocking it
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error) throw gone();
}

nlohmann::json PeerProcess::receive() {
  std::size_t scanned = 0, end = 0;
  while ((end = buffer_.find('\n', scanned)) == std::string::npos) {
    scanned = buffer_.size();
    char chunk[65536];
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;  // a first SIGINT: the sweep stops after this point
    if (n <= 0) throw gone();
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
  const std::string line = buffer_.substr(0, end);
  buffer_.erase(0, end + 1);
  nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
  if (message.is_discarded()) throw std::runtime_error("the peer wrote a line that is not JSON: " + line.substr(0, 200));
  return message;
}

std::string PeerProcess::last_error_line() const {
  struct stat info {};
  if (::fstat(stderr_file_, &info) != 0 || info.st_size <= 0) return "";
  const off_t tail = std::min<off_t>(info.st_size, 65536);
  std::string text(static_cast<std::size_t>(tail), '\0');
  const ssize_t n = ::pread(stderr_file_, text.data(), text.size(), info.st_size - tail);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!text.empty()) {
    const std::size_t start = text.find_last_of('\n', text.size() - 1);
    std::string line = start == std::string::npos ? text : text.substr(start + 1);
    text.resize(start == std::string::npos ? 0 : start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line;
  }
  return "";
}

PeerGone PeerProcess::gone() {
  int status = 0;
  std::string how = "closed its output";
  if (pid_ > 0 && reaped(pid_, std::chrono::seconds(2), status)) {
    how = describe_status(status);
    pid_ = -1;
  }
  const std::string last = last_error_line();
  return PeerGone("the peer " + how + (last.empty() ? "" : ": " + last));
}

}  // namespace attnbench
