#include "driver/sweep.hpp"

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
      << p.threads;
  return out.str();
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// Identifies a (point, scorer) in timing.csv: the key columns but the stage.
std::string measurement_id(const std::vector<std::string>& key_cells) {
  return join(std::vector<std::string>(key_cells.begin(), key_cells.end() - 1), "\x1f");
}

// The (point, scorer) pairs with every stage already in the folder's timing.csv.
std::set<std::string> finished_measurements(const std::filesystem::path& dir) {
  const CsvDocument doc = read_csv(dir / "timing.csv");
  std::map<std::string, std::size_t> stages;
  for (const CsvRow& row : doc.rows) {
    std::vector<std::string> key;
    for (std::string_view column : schema::kTimingKey) key.push_back(row.cells[*doc.column(column)]);
    ++stages[measurement_id(key)];
  }
  std::set<std::string> done;
  for (const auto& [id, count] : stages)
    if (count >= schema::kStages.size()) done.insert(id);
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

std::string repro_command(const Problem& p, const BenchSettings& bench) {
  std::string flags = repro_flags(p);
  return "attnbench run " + flags + " --repetitions " + std::to_string(bench.repetitions) + " --min-time " +
         number(bench.min_time);
}

void print_plan(const Grid& grid, const BenchSettings& bench, std::uint64_t max_memory) {
  double seconds = 0;
  std::printf("%5s  %-80s  %-40s  %9s  %9s\n", "point", "sizes", "scorers", "memory", "time");
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const std::uint64_t bytes = point_memory_bytes(grid[i]);
    const double t = bytes > max_memory ? 0 : point_seconds(grid[i], bench);
    seconds += t;
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.3g GiB", gib(bytes));
    std::printf("%5zu  %-80s  %-40s  %9s  %9s%s\n", i + 1, describe(grid[i].problem).c_str(),
                join(grid[i].scorers, ",").c_str(), memory, format_duration(t).c_str(),
                bytes > max_memory ? "  (skipped: over --max-memory)" : "");
  }
  std::printf("total: %zu points, about %s\n", grid.size(), format_duration(seconds).c_str());
}

nlohmann::json scenario_json(const SweepOptions& options) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& file : options.scenario_files)
    files.push_back({{"path", file.string()}, {"sha256", sha256_of_file(file)}});
  return files;
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
    print_plan(grid, options.bench, options.max_memory_bytes);
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
  RunFolder folder(options.out_dir, options.resume);
  const std::optional<Roofline> roofline = load_roofline(options.machine_json);

  const std::vector<std::string> warnings = timing_warnings(machine);
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
            {"max_memory_bytes", options.max_memory_bytes},
            {"start_utc", utc_now()},
            {"end_utc", nullptr}};
  }
  meta["warnings"] = warnings;
  meta["roofline"] = roofline ? nlohmann::json(options.machine_json.string()) : nlohmann::json(nullptr);
  meta["status"] = "running";
  if (options.resume) meta["resumed_utc"].push_back(utc_now());
  write_file_atomically(meta_path, meta.dump(2) + "\n");

  const std::set<std::string> finished = finished_measurements(options.out_dir);
  std::set<std::string> entropy_written = written_entropy_keys(options.out_dir);
  double total_estimate = 0;
  for (const GridPoint& point : grid) total_estimate += point_seconds(point, options.bench);
  Progress progress(options.quiet, total_estimate, grid.size());
  install_interrupt_handlers();

  double done_estimate = 0;
  std::size_t points_done = 0;
  for (std::size_t i = 0; i < grid.size() && !stop_requested(); ++i) {
    GridPoint todo{grid[i].problem, {}};
    for (const std::string& scorer : grid[i].scorers) {
      Problem p = grid[i].problem;
      p.scorer = scorer;
      if (!finished.contains(measurement_id(timing_key(p, "")))) todo.scorers.push_back(scorer);
    }
    progress.start_point(i, describe(todo.problem), done_estimate);
    PointRows rows;
    const std::uint64_t need = point_memory_bytes(todo);
    for (std::size_t s = 0; s < todo.scorers.size() && need > options.max_memory_bytes; ++s) {
      Problem p = todo.problem;
      p.scorer = todo.scorers[s];
      char status[128];
      std::snprintf(status, sizeof status, "skipped: needs %.3g GiB > --max-memory %.3g GiB", gib(need),
                    gib(options.max_memory_bytes));
      rows.timing += skipped_rows(p, status, repro_command(p, options.bench));
    }
    if (!todo.scorers.empty() && need <= options.max_memory_bytes) {
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
    }
    folder.append(rows.timing, rows.samples, rows.entropy);
    done_estimate += point_seconds(grid[i], options.bench);
    ++points_done;
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
