#include "driver/measure_grid.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked_size.hpp"
#include "driver/csv_io.hpp"
#include "driver/estimate.hpp"
#include "driver/interrupt.hpp"
#include "driver/progress.hpp"
#include "driver/result_rows.hpp"
#include "driver/roofline_measure.hpp"
#include "driver/run_journal.hpp"
#include "driver/schema.hpp"
#include "driver/sweep_plan.hpp"

namespace attnbench {

namespace {

// Identifies a (point, scorer, impl) in timing.csv: the key columns but the stage.
std::string measurement_id(const std::vector<std::string>& key_cells) {
  return fmt::format("{}", fmt::join(key_cells.begin(), key_cells.end() - 1, "\x1f"));
}

// The stages in the folder's timing.csv of each measurement (point, scorer, impl).
using StagesPresent = std::map<std::string, std::set<std::string>>;

StagesPresent stages_present(const std::filesystem::path& dir) {
  const CsvDocument doc = read_run_csv(dir, "timing.csv");
  StagesPresent present;
  for (const CsvRow& row : doc.rows) {
    std::vector<std::string> key;
    for (std::string_view column : schema::kTimingKey) key.push_back(row.cells[*doc.column(column)]);
    present[measurement_id(key)].insert(key.back());
  }
  return present;
}

// The entropy rows already written, by key, so that a key is written once.
std::set<std::string> written_entropy_keys(const std::filesystem::path& dir) {
  const CsvDocument doc = read_run_csv(dir, "entropy.csv");
  std::set<std::string> keys;
  for (const CsvRow& row : doc.rows)
    keys.insert(fmt::format("{}", fmt::join(row.cells.begin(), row.cells.begin() + schema::kEntropyKey.size(), "\x1f")));
  return keys;
}

// The scorers of `point` whose measurement lacks a row of one of the point's stages:
// attnbench's own, or (for_peer) the peer's, whose rows say impl=torch whatever the point's impl.
GridPoint unfinished(const GridPoint& point, const StagesPresent& present, bool for_peer) {
  GridPoint todo{point.problem, {}, point.settings};
  for (const std::string& scorer : point.scorers) {
    Problem p = point.problem;
    p.scorer = scorer;
    const auto found = present.find(measurement_id(for_peer ? peer_timing_key(p, "") : timing_key(p, "")));
    const std::vector<std::string>& stages = point.settings.bench.stages;
    if (found == present.end() || !std::all_of(stages.begin(), stages.end(), [&](const std::string& stage) {
          return found->second.contains(stage);
        }))
      todo.scorers.push_back(scorer);
  }
  return todo;
}

// " --stages a,b" when the stages are not default_stages(), else "".
std::string stages_flag(const BenchSettings& bench) {
  return bench.stages == default_stages() ? "" : " --stages " + fmt::format("{}", fmt::join(bench.stages, ","));
}

std::string repro_command(const Problem& p, const BenchSettings& bench) {
  return "attnbench run " + repro_flags(p) + stages_flag(bench) + " --repetitions " +
         std::to_string(bench.repetitions) + " --min-time " + number(bench.min_time);
}

// The `skipped` status of a point that needs more than `max_memory`; empty when it fits.
std::string memory_status(std::uint64_t need, std::uint64_t max_memory) {
  if (need == kSizeOverflow) return "skipped: needs more bytes than 64 bits can count";
  if (need <= max_memory) return "";
  char status[128];
  std::snprintf(status, sizeof status, "skipped: needs %.3g GiB > --max-memory %.3g GiB", gib(need), gib(max_memory));
  return status;
}

// The `skipped` status of a bf16 point of the oneDNN impl where oneDNN has no bf16 matmul on
// this CPU (oneDNN 2.6 below AVX-512): its matmuls would multiply in f32 on rounded operands
// (OneDnnContext), which times no bf16 matmul. Empty for f32, for the fused impl (its bf16
// rows are stored bf16 and computed in f32 on every CPU) and where oneDNN has one. A grid of
// both impls and dtypes (scenarios/perf.csv) so still runs there.
std::string dtype_status(const Problem& p) {
  if (p.dtype != DType::bf16 || p.impl != Impl::onednn) return "";
  const std::optional<std::string> reason = no_bf16_matmul_reason();
  return reason ? "skipped: --dtype bf16 --impl onednn: " + *reason : "";
}

// Skipped rows with `status` for every scorer x stage of `todo`.
PointRows skipped_point(const GridPoint& todo, const std::string& status) {
  PointRows rows;
  for (const std::string& scorer : todo.scorers) {
    Problem p = todo.problem;
    p.scorer = scorer;
    rows.timing += skipped_rows(p, status, repro_command(p, todo.settings.bench), todo.settings.bench.stages);
  }
  return rows;
}

// attnbench's rows for the scorers of `todo`: measured, or skipped when the point needs
// more than --max-memory or its buffers cannot be allocated. An entropy key already in
// `entropy_written` is not written again.
PointRows measure_ours(const GridPoint& todo, const SweepOptions& options, const std::optional<Roofline>& roofline,
                       std::set<std::string>& entropy_written) {
  const BenchSettings& bench = todo.settings.bench;
  PointRows rows;
  if (todo.scorers.empty()) return rows;
  std::string skip = dtype_status(todo.problem);
  if (skip.empty()) skip = memory_status(point_memory_bytes(todo), options.max_memory_bytes);
  if (!skip.empty()) return skipped_point(todo, skip);
  std::vector<ScorerMeasurement> measured;
  try {
    measured = measure_point(todo, bench);
  } catch (const std::bad_alloc&) {
    return skipped_point(todo, "skipped: cannot allocate its buffers");
  } catch (const std::length_error& e) {
    return skipped_point(todo, std::string("skipped: ") + e.what());
  }
  for (const ScorerMeasurement& m : measured) {
    Problem p = todo.problem;
    p.scorer = m.scorer;
    const std::string entropy_id = fmt::format("{}", fmt::join(entropy_key(p), "\x1f"));
    const PointRows one = measured_rows(p, m, roofline, repro_command(p, bench),
                                        !entropy_written.contains(entropy_id));
    entropy_written.insert(entropy_id);
    rows.timing += one.timing;
    rows.samples += one.samples;
    rows.entropy += one.entropy;
  }
  return rows;
}

// The peer's rows for the scorers of `theirs`, appended; they join `present`.
void measure_theirs(const GridPoint& theirs, const SweepOptions& options, TorchPeer& peer, RunFolder& folder,
                    StagesPresent& present) {
  const PeerRows rows = peer.measure(theirs.problem, theirs.scorers, theirs.settings.bench,
                                     memory_status(point_memory_bytes(theirs), options.max_memory_bytes));
  folder.append({rows.timing, rows.samples, ""});
  for (const std::string& scorer : theirs.scorers) {
    Problem p = theirs.problem;
    p.scorer = scorer;
    for (const std::string& stage : theirs.settings.bench.stages)
      present[measurement_id(peer_timing_key(p, ""))].insert(stage);
  }
}

}  // namespace

void measure_grid(const Grid& grid, const SweepOptions& options, RunFolder& folder, TorchPeer* peer,
                  const std::optional<Roofline>& roofline, std::size_t& points_done) {
  StagesPresent present = stages_present(folder.dir());
  std::set<std::string> entropy_written = written_entropy_keys(folder.dir());
  const std::vector<bool> peer_here = peer_points(grid);
  const std::vector<double> estimates = point_estimates(grid);
  double total_estimate = 0;
  for (double seconds : estimates) total_estimate += seconds;
  Progress progress(options.quiet, total_estimate, grid.size());
  install_interrupt_handlers();

  double done_estimate = 0;
  try {
    for (std::size_t i = 0; i < grid.size() && !stop_requested(); ++i) {
      const GridPoint ours = unfinished(grid[i], present, false);
      const GridPoint theirs = peer && peer_here[i] ? unfinished(grid[i], present, true)
                                                    : GridPoint{grid[i].problem, {}, grid[i].settings};
      progress.start_point(i, describe_point(ours) + (theirs.scorers.empty() ? "" : ", then torch"), done_estimate);
      const PointRows rows = measure_ours(ours, options, roofline, entropy_written);
      folder.append({rows.timing, rows.samples, rows.entropy});
      // After a first signal the peer's rows are left to --resume.
      if (!theirs.scorers.empty() && !stop_requested()) measure_theirs(theirs, options, *peer, folder, present);
      done_estimate += estimates[i];
      ++points_done;
    }
  } catch (...) {
    progress.finish();
    throw;
  }
  progress.finish();
}

}  // namespace attnbench
