// The machine's measured peaks (results/machine.json, written by `attnbench roofline`)
// and the share of the roofline a measurement reaches.
#pragma once

#include <filesystem>
#include <map>
#include <optional>

#include "driver/cost_model.hpp"

namespace attnbench {

struct Peak {
  double gflops = 0;  // f32 matmul
  double gbps = 0;    // streaming
};

struct Roofline {
  std::map<int, Peak> by_threads;

  // 100 x achieved GFLOP/s over min(peak GFLOP/s, intensity x peak GB/s) at `threads`
  // (NaN when that thread count was not measured).
  double percent(int threads, const StageCost& cost, double ns) const;
};

// Reads {"threads": {"1": {"f32_gflops": ..., "gbps": ...}, ...}}; nullopt when the file is absent.
// Throws std::invalid_argument naming the file when it exists but does not parse.
std::optional<Roofline> load_roofline(const std::filesystem::path& machine_json);

}  // namespace attnbench
