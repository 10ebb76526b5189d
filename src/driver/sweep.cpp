#include "driver/sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "driver/csv_io.hpp"
#include "driver/estimate.hpp"
#include "driver/grid_json.hpp"
#include "driver/interrupt.hpp"
#include "driver/progress.hpp"
#include "driver/result_rows.hpp"
#include "driver/roofline.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_meta.hpp"
#include "driver/schema.hpp"
#include "driver/summary.hpp"

namespace attnbench {

namespace {

double gib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

std::string describe(const Problem& p) {
  std::ostringstream out;
  out << "batch " << p.batch << " src_len " << p.src_len << " tgt_len " << p.tgt_len << " emb " << p.emb_dim
      << " enc " << p.enc_dim << " dec " << p.dec_dim << " attn " << p.attn_dim << " vocab " << p.vocab << " threads "
      << p.threads << " " << to_string(p.impl) << " " << to_string(p.dtype);
  return out.str();
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Identifies a (point, scorer, impl) in timing.csv: the key columns but the stage.
std::string measurement_id(const std::vector<std::string>& key_cells) {
  return join(std::vector<std::string>(key_cells.begin(), key_cells.end() - 1), "\x1f");
}

// The measurements (point, scorer, impl) with a row for every one of `stages` in the
// folder's timing.csv.
std::set<std::string> finished_measurements(const std::filesystem::path& dir, const std::vector<std::string>& stages) {
  const CsvDocument doc = read_csv(dir / "timing.csv");
  std::map<std::string, std::set<std::string>> present;
  for (const CsvRow& row : doc.rows) {
    std::vector<std::string> key;
    for (std::string_view column : schema::kTimingKey) key.push_back(row.cells[*doc.column(column)]);
    present[measurement_id(key)].insert(key.back());
  }
  std::set<std::string> done;
  for (const auto& [id, have] : present)
    if (std::all_of(stages.begin(), stages.end(), [&](const std::string& stage) { return have.contains(stage); }))
      done.insert(id);
  return done;
}

// The entropy rows already written, by key, so that a key is written once.
std::set<std::string> written_entropy_keys(const std::filesystem::path& dir) {
  const CsvDocument doc = read_csv(dir / "entropy.csv");
  std::set<std::string> keys;
  for (const CsvRow& row : doc.rows)
    keys.insert(join(std::vector<std::string>(row.cells.begin(), row.cells.begin() + schema::kEntropyKey.size()),
                     "\x1f"));
  return keys;
}

// The scorers of `point` whose measurement is not in `finished`: attnbench's own, or
// (for_peer) the peer's, whose rows say impl=torch whatever the point's impl.
GridPoint unfinished(const GridPoint& point, const std::set<std::string>& finished, bool for_peer) {
  GridPoint todo{point.problem, {}};
  for (const std::string& scorer : point.scorers) {
    Problem p = point.problem;
    p.scorer = scorer;
    if (!finished.contains(measurement_id(for_peer ? peer_timing_key(p, "") : timing_key(p, ""))))
      todo.scorers.push_back(scorer);
  }
  return todo;
}

// A point's problem as the peer sees it: the same for every impl of it.
std::string peer_problem_id(Problem p) {
  p.scorer.clear();
  return measurement_id(peer_timing_key(p, ""));
}

// " --stages a,b" when not every stage is timed, else "".
std::string stages_flag(const BenchSettings& bench) {
  return bench.stages == default_stages() ? "" : " --stages " + join(bench.stages, ",");
}

std::string repro_command(const Problem& p, const BenchSettings& bench) {
  std::string flags = repro_flags(p);
  return "attnbench run " + flags + stages_flag(bench) + " --repetitions " + std::to_string(bench.repetitions) +
         " --min-time " + number(bench.min_time);
}

// The `skipped` status of a point that needs more than `max_memory`; empty when it fits.
std::string memory_status(std::uint64_t need, std::uint64_t max_memory) {
  if (need <= max_memory) return "";
  char status[128];
  std::snprintf(status, sizeof status, "skipped: needs %.3g GiB > --max-memory %.3g GiB", gib(need), gib(max_memory));
  return status;
}

// Whether the peer measures at each point of `grid`: with_peer, at the first point of
// each problem (the peer runs once per problem, whatever the impl).
std::vector<bool> peer_points(const Grid& grid, bool with_peer) {
  std::vector<bool> here;
  std::set<std::string> planned;
  for (const GridPoint& point : grid)
    here.push_back(with_peer && planned.insert(peer_problem_id(point.problem)).second);
  return here;
}

// Estimated seconds per point of `grid`; a point where the peer runs also carries the
// peer's time, taken to be attnbench's.
std::vector<double> point_estimates(const Grid& grid, const BenchSettings& bench, bool with_peer) {
  const std::vector<bool> peer_here = peer_points(grid, with_peer);
  std::vector<double> seconds;
  for (std::size_t i = 0; i < grid.size(); ++i)
    seconds.push_back(point_seconds(grid[i], bench) * (peer_here[i] ? 2 : 1));
  return seconds;
}

void print_plan(const Grid& grid, const BenchSettings& bench, std::uint64_t max_memory, bool with_peer) {
  const std::vector<double> estimates = point_estimates(grid, bench, with_peer);
  const std::vector<bool> peer_here = peer_points(grid, with_peer);
  double seconds = 0;
  std::printf("%5s  %-80s  %-40s  %9s  %9s\n", "point", "sizes", "scorers", "memory", "time");
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const std::uint64_t bytes = point_memory_bytes(grid[i]);
    const double t = bytes > max_memory ? 0 : estimates[i];
    seconds += t;
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.3g GiB", gib(bytes));
    std::printf("%5zu  %-80s  %-40s  %9s  %9s%s\n", i + 1, describe(grid[i].problem).c_str(),
                (join(grid[i].scorers, ",") + (peer_here[i] ? " + torch" : "")).c_str(), memory,
                format_duration(t).c_str(), bytes > max_memory ? "  (skipped: over --max-memory)" : "");
  }
  std::printf("total: %zu points, about %s%s\n", grid.size(), format_duration(seconds).c_str(),
              with_peer ? " (with the torch peer)" : "");
}

nlohmann::json scenario_json(const SweepOptions& options) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : options.scenario_files)
    files.push_back({{"path", file.string()}, {"sha256", sha256_of_file(file)}});
  return files;
}

// Why the peer here may not continue the run of `meta`: another torch version. Empty when it may.
std::string peer_mismatch(const nlohmann::json& meta, const TorchPeer& peer) {
  if (!meta.contains("peer") || !meta["peer"].is_object()) return "";
  const std::string there = meta["peer"].value("torch_version", ""),
                    here = peer.description().value("torch_version", "");
  return there == here ? "" : "torch " + there + " there, " + here + " here";
}

// attnbench's rows for the scorers of `todo`: measured, or skipped when the point needs
// more than --max-memory. An entropy key already in `entropy_written` is not written again.
PointRows measure_ours(const GridPoint& todo, const SweepOptions& options, const std::optional<Roofline>& roofline,
                       std::set<std::string>& entropy_written) {
  PointRows rows;
  if (todo.scorers.empty()) return rows;
  const std::string skip = memory_status(point_memory_bytes(todo), options.max_memory_bytes);
  if (!skip.empty()) {
    for (const std::string& scorer : todo.scorers) {
      Problem p = todo.problem;
      p.scorer = scorer;
      rows.timing += skipped_rows(p, skip, repro_command(p, options.bench), options.bench.stages);
    }
    return rows;
  }
  for (const ScorerMeasurement& m : measure_point(todo, options.bench)) {
    Problem p = todo.problem;
    p.scorer = m.scorer;
    const std::string entropy_id = join(entropy_key(p), "\x1f");
    const PointRows one = measured_rows(p, m, roofline, repro_command(p, options.bench),
                                        !entropy_written.contains(entropy_id));
    entropy_written.insert(entropy_id);
    rows.timing += one.timing;
    rows.samples += one.samples;
    rows.entropy += one.entropy;
  }
  return rows;
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
    print_plan(grid, options.bench, options.max_memory_bytes, options.peer.has_value());
    return 0;
  }

  const nlohmann::json machine = build_and_machine();
  const std::filesystem::path meta_path = options.out_dir / "meta.json";
  nlohmann::json meta;
  if (options.resume) {
    std::ifstream in(meta_path);
    if (!in) throw std::invalid_argument("--resume: " + meta_path.string() + " not found; is this a run folder?");
    meta = nlohmann::json::parse(in, nullptr, false);
    if (meta.is_discarded()) throw std::invalid_argument("--resume: " + meta_path.string() + " does not parse");
    const std::string mismatch = resume_mismatch(meta, machine);
    if (!mismatch.empty() && !options.force)
      throw std::invalid_argument("--resume: the run was made elsewhere (" + mismatch +
                                  "); add --force to continue it anyway");
  }
  std::optional<TorchPeer> peer;  // started before the folder: a peer that cannot start leaves nothing behind
  if (options.peer) {
    peer.emplace(*options.peer);
    const std::string mismatch = options.resume ? peer_mismatch(meta, *peer) : "";
    if (!mismatch.empty() && !options.force)
      throw std::invalid_argument("--resume: the run was made elsewhere (" + mismatch +
                                  "); add --force to continue it anyway");
  }
  RunFolder folder(options.out_dir, options.resume);
  const std::optional<Roofline> roofline = load_roofline(options.machine_json);

  std::vector<std::string> warnings = timing_warnings(machine);
  if (peer && !peer->warning().empty()) warnings.push_back(peer->warning());
  for (const std::string& warning : warnings) std::cerr << "attnbench: warning: " << warning << "\n";
  if (!options.resume) {
    meta = {{"build", machine},
            {"command", options.command_line},
            {"scenario", options.scenario},
            {"scenario_files", scenario_json(options)},
            {"grid", grid_to_json(options.grid)},
            {"shard", std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count)},
            {"points", grid.size()},
            {"repetitions", options.bench.repetitions},
            {"min_time_s", options.bench.min_time},
            {"stages", options.bench.stages},
            {"peer", peer ? peer->description() : nlohmann::json(nullptr)},
            {"max_memory_bytes", options.max_memory_bytes},
            {"start_utc", utc_now()},
            {"end_utc", nullptr}};
  }
  meta["warnings"] = warnings;
  meta["roofline"] = roofline ? nlohmann::json(options.machine_json.string()) : nlohmann::json(nullptr);
  meta["status"] = "running";
  if (options.resume) meta["resumed_utc"].push_back(utc_now());
  write_file_atomically(meta_path, meta.dump(2) + "\n");

  std::set<std::string> finished = finished_measurements(options.out_dir, options.bench.stages);
  std::set<std::string> entropy_written = written_entropy_keys(options.out_dir);
  const std::vector<double> estimates = point_estimates(grid, options.bench, peer.has_value());
  double total_estimate = 0;
  for (double seconds : estimates) total_estimate += seconds;
  Progress progress(options.quiet, total_estimate, grid.size());
  install_interrupt_handlers();

  double done_estimate = 0;
  std::size_t points_done = 0;
  try {
    for (std::size_t i = 0; i < grid.size() && !stop_requested(); ++i) {
      const GridPoint ours = unfinished(grid[i], finished, false);
      const GridPoint theirs = peer ? unfinished(grid[i], finished, true) : GridPoint{grid[i].problem, {}};
      progress.start_point(i, describe(ours.problem) + (theirs.scorers.empty() ? "" : ", then torch"),
                           done_estimate);
      const PointRows rows = measure_ours(ours, options, roofline, entropy_written);
      folder.append(rows.timing, rows.samples, rows.entropy);
      if (!theirs.scorers.empty() && !stop_requested()) {  // after a first signal, --resume runs the peer
        const PeerRows peer_rows =
            peer->measure(theirs.problem, theirs.scorers, options.bench,
                          memory_status(point_memory_bytes(theirs), options.max_memory_bytes));
        folder.append(peer_rows.timing, peer_rows.samples, "");
        for (const std::string& scorer : theirs.scorers) {
          Problem p = theirs.problem;
          p.scorer = scorer;
          finished.insert(measurement_id(peer_timing_key(p, "")));
        }
      }
      done_estimate += estimates[i];
      ++points_done;
    }
  } catch (const std::exception& error) {  // e.g. the peer failed: the run's files stay valid
    progress.finish();
    meta["status"] = "failed";
    meta["error"] = error.what();
    meta["end_utc"] = utc_now();
    meta["points_done_this_session"] = points_done;
    write_file_atomically(meta_path, meta.dump(2) + "\n");
    throw;
  }
  progress.finish();

  const bool interrupted = stop_requested();
  meta["status"] = interrupted ? "interrupted" : "complete";
  meta["end_utc"] = utc_now();
  meta["points_done_this_session"] = points_done;
  write_file_atomically(meta_path, meta.dump(2) + "\n");
  std::cout << summary_table(options.out_dir);
  std::cout << "results: " << options.out_dir.string() << "\n";
  if (interrupted)
    std::cerr << "attnbench: interrupted after " << points_done << " of " << grid.size()
              << " points; continue with --resume " << options.out_dir.string() << "\n";
  return interrupted ? kExitInterrupted : 0;
}

}  // namespace attnbench
