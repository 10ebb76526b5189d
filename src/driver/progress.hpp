// The progress line on stderr: points done/total, the current point, ETA.
#pragma once

#include <chrono>
#include <string>

namespace attnbench {

// On a terminal, one line rewritten in place; otherwise one plain line per point
// (no control characters); nothing when quiet.
class Progress {
 public:
  Progress(bool quiet, double total_estimate_seconds, std::size_t total_points);

  // Announces point `index` (0-based) of total; `done_estimate` is the estimated
  // seconds of the points finished so far, used to scale the ETA to this machine.
  void start_point(std::size_t index, const std::string& description, double done_estimate);
  // Ends the line on a terminal.
  void finish();

 private:
  bool quiet_, terminal_;
  double total_estimate_;
  std::size_t total_points_;
  std::chrono::steady_clock::time_point started_;
};

// "1h02m", "3m05s", "42s"; "2.78e+10h" from 10^8 s on; "?" for a negative or NaN estimate.
std::string format_duration(double seconds);

}  // namespace attnbench
