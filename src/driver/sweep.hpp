// `attnbench run`: measures every point of a grid into a run folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/grid.hpp"
#include "driver/interrupt.hpp"
#include "driver/peer_torch.hpp"
#include "driver/point_bench.hpp"

namespace attnbench {

struct SweepOptions {
  Grid grid;                                        // every point with its settings (the run's, not the shard's)
  std::string scenario;                             // name for results/<scenario>/ and meta.json
  std::vector<std::filesystem::path> scenario_files;  // recorded with their sha256
  std::string command_line;
  std::filesystem::path out_dir;                    // the run folder (--out, --resume, or a new timestamped one)
  std::optional<nlohmann::json> resumed;            // --resume: the run's meta.json (read_run_meta)
  bool force = false, dry_run = false, quiet = false;
  std::optional<PeerCommand> peer;                  // how to start the peer, when a point's settings ask for it
  std::uint64_t max_memory_bytes = 0;
  int shard_index = 1, shard_count = 1;             // --shard K/N, 1-based K
  std::filesystem::path machine_json;               // roofline figures, if present
};

// Runs (or, with dry_run, only lists) the sweep in four steps: open or resume the run folder
// (open_run), write meta.json (RunMetaFile), measure the grid (measure_grid), finish
// (status, summary table); returns 0, or kExitInterrupted.
// With a peer, each point is measured by attnbench and its rows appended, then the peer
// measures the same problem (once for all impls of it) and its rows (impl=torch) are
// appended likewise; the peer is skipped for points whose torch rows the folder holds.
// Throws std::invalid_argument for what the user must fix (unwritable folder, resume of
// another machine's run without --force, a peer that does not start) before any work.
int run_sweep(const SweepOptions& options);

// The points of shard K of N: every N-th point starting at K-1, in grid order.
Grid shard_of(const Grid& grid, int index, int count);

}  // namespace attnbench
