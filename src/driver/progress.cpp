#include "driver/progress.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>

namespace attnbench {

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Progress::Progress(bool quiet, double total_estimate_seconds, std::size_t total_points)
    : quiet_(quiet),
      terminal_(isatty(STDERR_FILENO) != 0),
      total_estimate_(total_estimate_seconds),
      total_points_(total_points),
      started_(std::chrono::steady_clock::now()) {}

void Progress::start_point(std::size_t index, const std::string& description, double done_estimate) {
  if (quiet_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double speed = done_estimate > 0 && elapsed > 0 ? elapsed / done_estimate : 1.0;
  const std::string eta = format_duration((total_estimate_ - done_estimate) * speed);
  if (terminal_)
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s  ETA %s", index + 1, total_points_, description.c_str(), eta.c_str());
  else
    std::fprintf(stderr, "[%zu/%zu] %s  ETA %s\n", index + 1, total_points_, description.c_str(), eta.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (!quiet_ && terminal_) std::fprintf(stderr, "\r\033[K");
}

}  // namespace attnbench
