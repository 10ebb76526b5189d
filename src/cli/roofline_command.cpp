// `attnbench roofline`: measures the machine's peaks per thread count into results/machine.json.
#include <omp.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/source_paths.hpp"
#include "driver/roofline_measure.hpp"
#include "driver/run_folder.hpp"

namespace attnbench {

namespace {

struct RooflineOptions {
  std::string threads;  // empty: 1 .. the core count
  std::string out;      // empty: results/machine.json under the project root
  double seconds = 0.2;
};

// Fails unless `out` can be written: not a folder, its folder exists (or can be made) and
// takes a new file. Leaves nothing behind.
void check_writable(const std::filesystem::path& out) {
  namespace fs = std::filesystem;
  const auto fail = [&](const std::string& reason) {
    return std::invalid_argument("--out: bad value '" + out.string() + "': " + reason);
  };
  std::error_code error;
  if (out.empty() || fs::is_directory(out, error)) throw fail("is a folder; give a file name");
  const fs::path folder = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::is_directory(folder, error)) throw fail("folder " + folder.string() + " does not exist");
  const fs::path probe = out.string() + ".tmp";
  const bool existed = fs::exists(probe, error);
  if (!std::ofstream(probe, std::ios::app)) throw fail("cannot be written");
  if (!existed) fs::remove(probe, error);
}

int run_roofline(const RooflineOptions& o) {
  std::vector<int> threads;
  if (o.threads.empty()) {
    for (int t = 1; t <= std::max(1, omp_get_num_procs()); ++t) threads.push_back(t);
  } else {
    threads = parse_roofline_threads(o.threads);
  }
  if (!(o.seconds > 0) || !std::isfinite(o.seconds) || o.seconds > 3600)
  {
    std::ostringstream value;
    value << o.seconds;
    throw std::invalid_argument("--seconds: bad value '" + value.str() +
                                "': must be a positive number of seconds (at most 3600)");
  }
  const std::filesystem::path out = o.out.empty() ? project_root() / "results" / "machine.json" : std::filesystem::path(o.out);
  check_writable(out);

  RooflineSettings settings;
  settings.seconds = o.seconds;
  std::ostringstream command;
  command << "attnbench roofline --threads ";
  for (std::size_t i = 0; i < threads.size(); ++i) command << (i ? "," : "") << threads[i];
  command << " --seconds " << o.seconds;
  if (!o.out.empty()) command << " --out " << o.out;

  std::vector<ThreadPeaks> peaks;
  for (const int t : threads) {
    std::cerr << "roofline: " << t << (t == 1 ? " thread" : " threads") << " ..." << std::endl;
    peaks.push_back(measure_peaks(t, settings));
  }
  const nlohmann::json doc = roofline_json(peaks, settings, command.str());
  write_file_atomically(out, doc.dump(2) + "\n");
  std::cout << roofline_table(peaks);
  if (!doc["bf16_reason"].is_null()) std::cout << "bf16: " << doc["bf16_reason"].get<std::string>() << "\n";
  std::cout << "matmul: f32 " << doc["matmul_impl"]["f32"].get<std::string>() << ", bf16 "
            << (doc["matmul_impl"]["bf16"].is_null() ? std::string("none") : doc["matmul_impl"]["bf16"].get<std::string>())
            << "; triad arrays " << doc["method"]["stream_elements"].get<std::size_t>() * sizeof(float) / (1 << 20)
            << " MiB each\n";
  std::cout << "wrote " << out.string() << "\n";
  return 0;
}

}  // namespace

void setup_roofline(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RooflineOptions>();
  CLI::App* sub = app.add_subcommand(
      "roofline",
      "Measure the machine's peaks per thread count: f32 and bf16 GFLOP/s of a oneDNN matmul (square\n"
      "sizes 1024, 1536, 2048; best median of 5 repetitions), STREAM-triad GB/s (arrays 4x the\n"
      "last-level cache) and read-only GB/s from DRAM, L3 and L2. Writes results/machine.json,\n"
      "which `run` uses for roofline_pct (the roof of the level a stage's bytes fit in).");
  sub->add_option("--threads", o->threads, "Thread counts, e.g. 1,2 or 1:4 (default: 1 up to the core count)");
  sub->add_option("--out", o->out, "JSON file to write (default: results/machine.json)");
  sub->add_option("--seconds", o->seconds,
                  "Seconds each timed repetition runs at least; the run takes about 60x this per thread count")
      ->capture_default_str();
  sub->callback([o, &exit_code] { exit_code = run_roofline(*o); });
}

}  // namespace attnbench
