// The machine's measured peaks (results/machine.json, written by `attnbench roofline`)
// and the share of the roofline a measurement reaches.
//
// results/machine.json:
//   {
//     "threads": {                       one entry per measured thread count (a decimal key)
//       "1": {"f32_gflops": 80.1,        best median GFLOP/s of an f32 oneDNN matmul
//             "bf16_gflops": 160.3,      the same with bf16 inputs, f32 accumulation and dst;
//                                        null (or absent) when oneDNN has no bf16 matmul here
//             "gbps": 25.0,              best median GB/s of a STREAM triad a = b + s c
//                                        (3 x 4 bytes per element, arrays >> last-level cache)
//             "read_gbps": 30.0,         median GB/s of a read-only sum over arrays >> last-level cache
//             "l2_gbps": 150.0,          the same over half of each thread's L2
//             "l3_gbps": 60.0,           the same over the largest half, quarter, ... of the L3 that
//                                        reads at >= 0.85x the fastest of them, when that one reads
//                                        >= 1.5x faster than DRAM (measure_l3_roof)
//             "l3_fit_bytes": 33554432,  twice that array: the working sets that read at l3_gbps;
//                                        each null when not measured
//             "fork_join_us": null},     median us of an empty OpenMP parallel region on that
//                                        many threads (null for 1); the loader ignores it
//       "2": {...}
//     },
//     "caches": {"l2_bytes": 1048576,    one core's L2 and the (shared) L3, 0 when unknown
//                "l3_bytes": 33554432},
//     "cpu_model": "...", "cpu_id": "AuthenticAMD family 25 model 17 stepping 1", "cores": 2,
//                                        the machine measured (meta.json's build fields)
//     "onednn_isa": "avx512_core_bf16", "measured_utc": "2026-11-30T04:00:00Z",
//     "command": "attnbench roofline --threads 1,2 ...", ...   provenance; the loader ignores it
//   }
// Only "threads" with f32_gflops and gbps is required (files written before bf16 or the
// read-only bandwidths were measured load too).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/problem.hpp"
#include "driver/cost_model.hpp"

namespace attnbench {

struct Peak {
  double gflops = 0;                  // f32 matmul
  double gbps = 0;                    // streaming triad (reads and writes DRAM)
  std::optional<double> bf16_gflops;  // bf16 matmul; unset when not measured or unsupported
  std::optional<double> read_gbps;    // read-only from DRAM; unset when not measured
  std::optional<double> l2_gbps;      // read-only from L2
  std::optional<double> l3_gbps;      // read-only from L3
  std::optional<double> l3_fit_bytes;  // the working sets that read at l3_gbps; unset: the whole L3

  // The compute roof for `dtype`; unset for bf16 when bf16_gflops is.
  std::optional<double> compute_gflops(DType dtype) const {
    return dtype == DType::bf16 ? bf16_gflops : std::optional<double>(gflops);
  }
};

struct Roofline {
  std::map<int, Peak> by_threads;
  double l2_bytes = 0;  // one core's L2; 0 when unknown
  double l3_bytes = 0;  // the L3; 0 when unknown
  // The file's cpu_model, cpu_id and cores, those it has (files of older builds lack cpu_id).
  nlohmann::json measured_on = nlohmann::json::object();

  // The memory roof (GB/s) for a stage whose compulsory bytes are `working_set` at `threads`,
  // repeated as the benchmarks repeat it: L2's when it fits in threads x l2_bytes, else L3's
  // when it fits in that thread count's l3_fit_bytes (else l3_bytes), else the DRAM read-only
  // figure, else the triad (each level only when measured). Unset when `threads` was not measured.
  std::optional<double> memory_gbps(int threads, double working_set) const;
  // "L2", "L3", "DRAM" (read-only) or "triad": the level memory_gbps takes; empty when unmeasured.
  std::string memory_level(int threads, double working_set) const;

  // 100 x achieved GFLOP/s over min(peak GFLOP/s, intensity x memory_gbps(threads, bytes))
  // at `threads`, with the bf16 peak for bf16 (NaN when that thread count or dtype was not
  // measured).
  double percent(int threads, DType dtype, const StageCost& cost, double ns) const;

  // Which roof limits a stage at `threads`: "memory" when its arithmetic intensity
  // (flops / bytes) times memory_gbps(threads, bytes) is below the peak GFLOP/s (left of the
  // ridge point), else "compute" (also for zero bytes). Empty when `threads` or dtype was not measured.
  std::string bound(int threads, DType dtype, const StageCost& cost) const;
};

// Why `roofline` does not describe `machine` (meta.json's build fields): a line naming both
// when a cpu_model, cpu_id or cores the file records differs, else "".
std::string roofline_machine_mismatch(const Roofline& roofline, const std::string& file, const nlohmann::json& machine);

// Reads the file above; nullopt when the file is absent.
// Throws std::invalid_argument naming the file when it exists but does not parse.
std::optional<Roofline> load_roofline(const std::filesystem::path& machine_json);

}  // namespace attnbench
