// The machine's measured peaks (results/machine.json, written by `attnbench roofline`)
// and the share of the roofline a measurement reaches.
//
// results/machine.json:
//   {
//     "threads": {                       one entry per measured thread count (a decimal key)
//       "1": {"f32_gflops": 80.1,        best median GFLOP/s of an f32 oneDNN matmul
//             "bf16_gflops": 160.3,      the same with bf16 inputs, f32 accumulation and dst;
//                                        null (or absent) when oneDNN has no bf16 matmul here
//             "gbps": 25.0},             best median GB/s of a STREAM triad a = b + s c
//                                        (3 x 4 bytes per element, arrays >> last-level cache)
//       "2": {...}
//     },
//     "cpu_model": "...", "onednn_isa": "avx512_core_bf16", "measured_utc": "2026-11-30T04:00:00Z",
//     "command": "attnbench roofline --threads 1,2 ...", ...   provenance; the loader ignores it
//   }
// Only "threads" with f32_gflops and gbps is required (files written before bf16 was measured load too).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/problem.hpp"
#include "driver/cost_model.hpp"

namespace attnbench {

struct Peak {
  double gflops = 0;                  // f32 matmul
  double gbps = 0;                    // streaming
  std::optional<double> bf16_gflops;  // bf16 matmul; unset when not measured or unsupported

  // The compute roof for `dtype`; unset for bf16 when bf16_gflops is.
  std::optional<double> compute_gflops(DType dtype) const {
    return dtype == DType::bf16 ? bf16_gflops : std::optional<double>(gflops);
  }
};

struct Roofline {
  std::map<int, Peak> by_threads;

  // 100 x achieved GFLOP/s over min(peak GFLOP/s, intensity x peak GB/s) at `threads`, with
  // the bf16 peak for bf16 (NaN when that thread count or dtype was not measured).
  double percent(int threads, DType dtype, const StageCost& cost, double ns) const;

  // Which roof limits a stage at `threads`: "memory" when its arithmetic intensity
  // (flops / bytes) times the peak GB/s is below the peak f32 GFLOP/s (left of the ridge
  // point), else "compute" (also for zero bytes). Empty when `threads` or dtype was not measured.
  std::string bound(int threads, DType dtype, const StageCost& cost) const;
};

// Reads the file above; nullopt when the file is absent.
// Throws std::invalid_argument naming the file when it exists but does not parse.
std::optional<Roofline> load_roofline(const std::filesystem::path& machine_json);

}  // namespace attnbench
