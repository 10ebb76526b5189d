// `attnbench run --peer torch`: the PyTorch eager peer, scripts/peer_torch.py --serve, in
// one persistent child process (torch imported once). The sweep hands it each point after
// measuring the point itself and appends the rows it answers (impl=torch) to the run folder.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem.hpp"
#include "driver/peer_process.hpp"
#include "driver/point_bench.hpp"

namespace attnbench {

// How to start the peer: the interpreter (ATTNBENCH_PYTHON) and scripts/peer_torch.py.
struct PeerCommand {
  std::filesystem::path python, script;
};

// The `impl` cell of the peer's rows.
inline constexpr std::string_view kPeerImpl = "torch";

// The timing key of the peer's row for scorer p.scorer at `stage`: timing_key() with
// impl "torch" (p.impl does not matter).
std::vector<std::string> peer_timing_key(const Problem& p, std::string_view stage);

// Whole CSV rows for timing.csv and samples.csv (the peer writes no entropy rows).
struct PeerRows {
  std::string timing, samples;
};

class TorchPeer {
 public:
  // Starts `python script --serve` and waits until it has imported torch. Throws
  // std::invalid_argument with one line starting "--peer torch: " when the interpreter or
  // the script is missing or torch does not import (the peer's own last error line).
  explicit TorchPeer(const PeerCommand& command);

  // For meta.json: {"name": "torch", "torch_version": "1.13.0", "python_version": "3.11.2",
  // "blas": ["/usr/lib/.../libblas.so.3"], "command": "/usr/bin/python3 .../scripts/peer_torch.py --serve"}.
  const nlohmann::json& description() const { return description_; }

  // What makes the peer's timings less trustworthy (one line, e.g. an unoptimized BLAS); empty when nothing.
  const std::string& warning() const { return warning_; }

  // The rows of `scorers` at p for bench.stages, timed with bench's repetitions and
  // min-time (the same seed, init, sizes and threads as p); with a non-empty `skip_status`,
  // skipped rows carrying it. Every row is checked to have the schema's width and the
  // expected key. Throws std::runtime_error naming the point when the peer fails.
  PeerRows measure(const Problem& p, const std::vector<std::string>& scorers, const BenchSettings& bench,
                   const std::string& skip_status = "");

 private:
  std::string command_line_;
  PeerProcess process_;
  nlohmann::json description_;
  std::string warning_;
};

}  // namespace attnbench
