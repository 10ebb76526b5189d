// Measuring the machine's roofline (`attnbench roofline`): peak f32 and bf16 GFLOP/s of a
// oneDNN matmul and streaming GB/s of an OpenMP triad, per thread count; the JSON that
// load_roofline reads (format in driver/roofline.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include "core/onednn_context.hpp"

namespace attnbench {

struct RooflineSettings {
  std::vector<std::int64_t> matmul_sizes{1024, 1536, 2048};  // square M = N = K tried; the best counts
  std::size_t stream_elements = 0;                           // floats per triad array; 0: default_stream_elements()
  int repetitions = 5;                                       // timed repetitions; their median counts
  double seconds = 0.2;                                      // each repetition runs at least this long
};

// The best median of one data type over the sizes tried.
struct MatmulPeak {
  double gflops = 0;
  std::int64_t size = 0;  // the M = N = K that reached it
  std::string impl;       // oneDNN's implementation, e.g. "brg:avx512_core"
};

struct ThreadPeaks {
  int threads = 1;
  MatmulPeak f32;
  std::optional<MatmulPeak> bf16;  // unset: see bf16_reason
  std::string bf16_reason;         // why bf16 was not measured; empty when it was
  double gbps = 0;
  std::size_t stream_elements = 0;
  std::optional<double> read_gbps;  // read-only sums: over stream_elements floats (DRAM),
  std::optional<double> l2_gbps;    // half of each thread's L2,
  std::optional<double> l3_gbps;    // the L3 as measure_l3_roof finds it; unset when that cache's
                                    // size is unknown or no part of it reads faster than DRAM
  std::optional<double> l3_fit_bytes;  // the bytes that read at l3_gbps (CacheRoof::fit_bytes)
  std::optional<double> fork_join_us;  // measure_fork_join_us; unset for 1 thread (no fork)
};

// A cache level's read-only roof: its GB/s and the working set that reads at that rate.
struct CacheRoof {
  double gbps = 0;
  double fit_bytes = 0;  // twice the array measured: each level is measured over half its size
};

// How much faster than DRAM (read-only) a level must read to count as a cache: between
// the Zen 4's L3 at 2.4x its DRAM and a Xeon guest's L3 at 1.7x, above the 1.14x of that
// guest's 128 MiB array, which reads half from DRAM.
inline constexpr double kCacheOverDram = 1.5;

// How close to the fastest halving a halving must read to count as all L3 (see
// measure_l3_roof): below the Zen 5's 8 and 16 MiB halvings' spread (93.6 and 84.3 GB/s on
// 1 thread), above its 32 MiB one's 68.6, which reads partly from DRAM.
inline constexpr double kL3Plateau = 0.85;

// The L3's roof as measured: read-only sums (`read_gbps_at(bytes)`) over half of `l3_bytes`,
// a quarter, an eighth, ... while the array is at least 2 x `l2_bytes_all_threads`; when the
// fastest of them reads at >= kCacheOverDram x `dram_gbps`, the roof is the largest that reads
// at >= kL3Plateau x the fastest. A VM can name its host's whole L3 (sysfs: 480 MiB on a 2-core
// Xeon guest, which read 64 MiB at 29 GB/s, 256 MiB at DRAM's 16; CPUID: 508 MiB on a Zen 5
// guest, whose 64 MiB read at 1.6x DRAM but 16 MiB at 2.6x): the halvings find the part that
// acts as this machine's L3. nullopt when none reads faster than DRAM by that factor, or when
// the L2's size is unknown (`l2_bytes_all_threads` 0: the smallest halvings would read from it).
std::optional<CacheRoof> measure_l3_roof(double l3_bytes, double l2_bytes_all_threads, double dram_gbps,
                                         const std::function<double(double bytes)>& read_gbps_at);

// Where sysfs describes cpu0's caches (absent in some VMs).
inline constexpr const char* kSysfsCacheFolder = "/sys/devices/system/cpu/cpu0/cache";

// A cache level's size in bytes for cpu0 (level 1: the data cache; 2: one core's L2; 3: the
// L3): as `sysfs_folder`'s index*/ entries give it, else as glibc's sysconf gives it (CPUID;
// the Zen 5 guest of 2026-12-06, without sysfs cache entries, reported its caches there), 0
// when neither knows.
std::size_t cache_bytes_in(const std::filesystem::path& sysfs_folder, int level);
std::size_t cache_bytes(int level);  // cache_bytes_in(kSysfsCacheFolder, level)

// Floats per triad array: 4x the last-level cache (`cache_bytes`), at least 16 Mi, and the three
// arrays together at most 1/8 of available memory.
std::size_t default_stream_elements();

// Why oneDNN has no bf16 x bf16 -> f32 matmul here ("oneDNN 2.6.3 has no bf16 matmul for ISA
// avx2"), or nullopt when it has one (onednn_has_bf16_matmul()). bf16 contexts then multiply in
// f32 on operands rounded to bf16: a bf16 roof or a timed oneDNN bf16 step would time that.
std::optional<std::string> no_bf16_matmul_reason();

// Times a square matmul src (n x n) x weights (n x n, oneDNN's preferred layout) -> dst
// (n x n, f32) at each size, a core MatmulOp on ctx (bf16 inputs on a bf16 context, both
// converted before the timing): one warm-up call, then `repetitions` repetitions of
// >= `seconds` each; returns the size with the best median GFLOP/s (2n^3 flops).
// Throws when oneDNN has no such matmul.
MatmulPeak measure_matmul_peak(OneDnnContext& ctx, const std::vector<std::int64_t>& sizes, int repetitions,
                               double seconds);

// Median GB/s of a[i] = b[i] + s c[i] over `elements` floats per array on `threads` OpenMP
// threads (arrays first touched by the same threads), counting 3 x 4 bytes per element.
double measure_stream_gbps(int threads, std::size_t elements, int repetitions, double seconds);

// Median GB/s of a read-only sum over `elements` floats split evenly over `threads` OpenMP
// threads (each reads its own part, first touched by it), 4 bytes per element; each call
// reads the array as many times as make 64 MiB, so small (cached) arrays are timed too.
double measure_read_gbps(int threads, std::size_t elements, int repetitions, double seconds);

// Median microseconds of one empty OpenMP parallel region on `threads` threads: the fork
// and the join that every parallel step pays once per region, whatever its size.
// Throws when the region runs on fewer threads.
double measure_fork_join_us(int threads, int repetitions, double seconds);

// Every figure at one thread count, on a OneDnnContext with that many threads.
ThreadPeaks measure_peaks(int threads, const RooflineSettings& settings);

// The machine.json document for these measurements; `command` is recorded as given.
nlohmann::json roofline_json(const std::vector<ThreadPeaks>& peaks, const RooflineSettings& settings,
                             const std::string& command);

// A small text table of the figures, one row per thread count.
std::string roofline_table(const std::vector<ThreadPeaks>& peaks);

// Parses --threads: a list or range spec ("1,2", "1:4") of counts >= 1, sorted, duplicates
// dropped. Throws std::invalid_argument "--threads: bad value 'x': reason".
std::vector<int> parse_roofline_threads(std::string_view text);

}  // namespace attnbench
