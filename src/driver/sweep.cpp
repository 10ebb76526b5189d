#include "driver/sweep.hpp"

#include <algorithm>
#include <iostream>

#include "driver/grid_json.hpp"
#include "driver/measure_grid.hpp"
#include "driver/meta_file.hpp"
#include "driver/roofline.hpp"
#include "driver/run_meta.hpp"
#include "driver/run_open.hpp"
#include "driver/summary.hpp"
#include "driver/sweep_plan.hpp"

namespace attnbench {

namespace {

nlohmann::json scenario_json(const SweepOptions& options) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : options.scenario_files)
    files.push_back({{"path", file.string()}, {"sha256", sha256_of_file(file)}});
  return files;
}

// One value when every point has the same, else the distinct values in first-seen order.
template <class Get>
nlohmann::json common_value(const Grid& grid, Get get) {
  nlohmann::json values = nlohmann::json::array();
  for (const GridPoint& point : grid)
    if (std::find(values.begin(), values.end(), nlohmann::json(get(point))) == values.end())
      values.push_back(get(point));
  return values.size() == 1 ? values[0] : values;
}

// The stages any point times, in schema order.
std::vector<std::string> stages_timed(const Grid& grid) {
  std::vector<std::string> stages;
  for (const std::string& stage : all_stages())
    for (const GridPoint& point : grid)
      if (std::find(point.settings.bench.stages.begin(), point.settings.bench.stages.end(), stage) !=
          point.settings.bench.stages.end()) {
        stages.push_back(stage);
        break;
      }
  return stages;
}

// meta.json of a new run: what it plans (the whole grid with each point's settings, this
// shard's point count) and with what; the run-wide repetitions, min_time_s and stages
// summarize the points' settings.
nlohmann::json new_run_meta(const SweepOptions& options, std::size_t shard_points, const nlohmann::json& machine,
                            const TorchPeer* peer) {
  return {{"build", machine},
          {"command", options.command_line},
          {"scenario", options.scenario},
          {"scenario_files", scenario_json(options)},
          {"grid", grid_to_json(options.grid)},
          {"shard", std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count)},
          {"points", shard_points},
          {"repetitions", common_value(options.grid, [](const GridPoint& p) { return p.settings.bench.repetitions; })},
          {"min_time_s", common_value(options.grid, [](const GridPoint& p) { return p.settings.bench.min_time; })},
          {"stages", stages_timed(options.grid)},
          {"peer", peer ? peer->description() : nlohmann::json(nullptr)},
          {"max_memory_bytes", options.max_memory_bytes},
          {"start_utc", utc_now()},
          {"end_utc", nullptr}};
}

// This session's warnings (timing conditions, the peer's BLAS, a roofline file of another
// machine), each printed on stderr.
std::vector<std::string> session_warnings(const nlohmann::json& machine, const TorchPeer* peer,
                                          const std::optional<Roofline>& roofline, const std::string& roofline_file) {
  std::vector<std::string> warnings = timing_warnings(machine);
  if (peer && !peer->warning().empty()) warnings.push_back(peer->warning());
  if (roofline) {
    const std::string other = roofline_machine_mismatch(*roofline, roofline_file, machine);
    if (!other.empty()) warnings.push_back(other);
  }
  for (const std::string& warning : warnings) std::cerr << "attnbench: warning: " << warning << "\n";
  return warnings;
}

// The last step: the status in meta.json, the summary table, how to continue if interrupted.
int finish_run(RunMetaFile& meta, const SweepOptions& options, std::size_t points_done, std::size_t points) {
  const bool interrupted = stop_requested();
  meta.finish(interrupted ? "interrupted" : "complete", points_done);
  std::cout << summary_table(options.out_dir);
  std::cout << "results: " << options.out_dir.string() << "\n";
  if (interrupted)
    std::cerr << "attnbench: interrupted after " << points_done << " of " << points
              << " points; continue with --resume " << options.out_dir.string() << "\n";
  return interrupted ? kExitInterrupted : 0;
}

}  // namespace

Grid shard_of(const Grid& grid, int index, int count) {
  Grid out;
  for (std::size_t i = 0; i < grid.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(count)) == index - 1) out.push_back(grid[i]);
  return out;
}

int run_sweep(const SweepOptions& options) {
  const Grid grid = shard_of(options.grid, options.shard_index, options.shard_count);
  if (options.dry_run) {
    print_plan(grid, options.max_memory_bytes);
    return 0;
  }

  const nlohmann::json machine = build_and_machine();
  const std::optional<Roofline> roofline = load_roofline(options.machine_json);  // before the folder is made
  const std::vector<bool> peer_here = peer_points(grid);
  OpenedRun run = open_run(options, machine, std::find(peer_here.begin(), peer_here.end(), true) != peer_here.end());
  RunMetaFile meta(options.out_dir,
                   options.resumed ? *options.resumed : new_run_meta(options, grid.size(), machine, run.peer.get()),
                   options.resumed.has_value(), session_warnings(machine, run.peer.get(), roofline, options.machine_json.string()),
                   roofline ? nlohmann::json(options.machine_json.string()) : nlohmann::json(nullptr));

  std::size_t points_done = 0;
  meta.fail_on_throw(points_done, [&] { measure_grid(grid, options, run.folder, run.peer.get(), roofline, points_done); });
  return finish_run(meta, options, points_done, grid.size());
}

}  // namespace attnbench
