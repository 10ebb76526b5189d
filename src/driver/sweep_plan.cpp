#include "driver/sweep_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "driver/estimate.hpp"
#include "driver/peer_torch.hpp"
#include "driver/progress.hpp"

namespace attnbench {

namespace {

// A point's problem as the peer sees it: the same for every impl of it.
std::string peer_problem_id(Problem p) {
  p.scorer.clear();
  return fmt::format("{}", fmt::join(peer_timing_key(p, ""), "\x1f"));
}

}  // namespace

void apply_setting_flags(Grid& grid, const std::map<std::string, std::string>& flags) {
  PointSettings checked;
  for (const auto& [name, text] : flags) {
    try {
      set_setting(checked, name, text, ',');
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(flag_name(name) + ": bad value '" + text + "': " + e.what());
    }
  }
  for (GridPoint& point : grid)
    for (const auto& [name, text] : flags) set_setting(point.settings, name, text, ',');
}

double gib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

std::string describe_point(const GridPoint& point) {
  const Problem& p = point.problem;
  std::ostringstream out;
  if (!point.settings.name.empty()) out << point.settings.name << ": ";
  out << "batch " << p.batch << " src_len " << p.src_len << " tgt_len " << p.tgt_len << " emb " << p.emb_dim
      << " enc " << p.enc_dim << " dec " << p.dec_dim << " attn " << p.attn_dim << " vocab " << p.vocab << " threads "
      << p.threads << " " << to_string(p.impl) << " " << to_string(p.dtype);
  return out.str();
}

std::vector<bool> peer_points(const Grid& grid) {
  std::vector<bool> here;
  std::set<std::string> planned;
  for (const GridPoint& point : grid)
    here.push_back(!point.settings.peer.empty() && planned.insert(peer_problem_id(point.problem)).second);
  return here;
}

std::vector<double> point_estimates(const Grid& grid) {
  const std::vector<bool> peer_here = peer_points(grid);
  std::vector<double> seconds;
  for (std::size_t i = 0; i < grid.size(); ++i)
    seconds.push_back(point_seconds(grid[i], grid[i].settings.bench) * (peer_here[i] ? 2 : 1));
  return seconds;
}

void print_plan(const Grid& grid, std::uint64_t max_memory) {
  const std::vector<double> estimates = point_estimates(grid);
  const std::vector<bool> peer_here = peer_points(grid);
  const bool with_peer = std::find(peer_here.begin(), peer_here.end(), true) != peer_here.end();
  double seconds = 0;
  std::printf("%5s  %-80s  %-40s  %9s  %9s\n", "point", "sizes", "scorers", "memory", "time");
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const std::uint64_t bytes = point_memory_bytes(grid[i]);
    const double t = bytes > max_memory ? 0 : estimates[i];
    seconds += t;
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.3g GiB", gib(bytes));
    std::printf("%5zu  %-80s  %-40s  %9s  %9s%s\n", i + 1, describe_point(grid[i]).c_str(),
                (fmt::format("{}", fmt::join(grid[i].scorers, ",")) + (peer_here[i] ? " + torch" : "")).c_str(), memory,
                format_duration(t).c_str(), bytes > max_memory ? "  (skipped: over --max-memory)" : "");
  }
  std::printf("total: %zu points, about %s%s\n", grid.size(), format_duration(seconds).c_str(),
              with_peer ? " (with the torch peer)" : "");
}

}  // namespace attnbench
