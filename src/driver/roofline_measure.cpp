#include "driver/roofline_measure.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "core/matmul_op.hpp"
#include "core/problem.hpp"
#include "driver/run_meta.hpp"
#include "driver/statistics.hpp"
#include "driver/value_spec.hpp"

namespace attnbench {

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

// One warm-up call, one call to size the repetitions, then `repetitions` repetitions of
// at least `seconds` each; the median nanoseconds per call.
template <class Call>
double median_ns_per_call(Call&& call, int repetitions, double seconds) {
  call();
  const auto start = Clock::now();
  call();
  const double once = std::max(ns_since(start), 1.0);
  const auto calls = static_cast<long>(std::max(1.0, std::ceil(seconds * 1e9 / once)));
  std::vector<double> per_call;
  for (int r = 0; r < std::max(repetitions, 1); ++r) {
    const auto begin = Clock::now();
    for (long i = 0; i < calls; ++i) call();
    per_call.push_back(ns_since(begin) / static_cast<double>(calls));
  }
  return summarize(per_call).median;
}

// The roofline's product: an (n x n) x (n x n) matmul on ctx (f32, or bf16 inputs), the
// weights in oneDNN's preferred layout.
MatmulOp square_matmul(OneDnnContext& ctx, std::int64_t n) {
  const dnnl::memory::desc square = plain_desc({n, n});
  return MatmulOp(ctx, square, square, square, {}, WeightsLayout::preferred);
}

// The size of a sysfs cache entry ("32K", "1024K", "32M") in bytes, 0 when unreadable.
std::size_t parse_cache_size(const std::string& size) {
  if (size.empty()) return 0;
  std::size_t unit = 1;
  if (size.back() == 'K') unit = 1024;
  if (size.back() == 'M') unit = 1024 * 1024;
  try {
    return std::stoull(size) * unit;
  } catch (const std::exception&) {
    return 0;
  }
}

// The size of the highest-level CPU cache in bytes, 0 when unknown.
std::size_t last_level_cache_bytes() {
  std::size_t best = 0;
  for (int level = 1; level <= 4; ++level)
    if (const std::size_t bytes = cache_bytes(level)) best = bytes;
  return best;
}

// glibc's figure for a cache level (from CPUID), 0 when it has none.
std::size_t sysconf_cache_bytes(int level) {
  const int names[] = {_SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL4_CACHE_SIZE};
  if (level < 1 || level > 4) return 0;
  const long bytes = sysconf(names[level - 1]);
  return bytes > 0 ? static_cast<std::size_t>(bytes) : 0;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace

std::size_t cache_bytes(int level) { return cache_bytes_in(kSysfsCacheFolder, level); }

std::size_t cache_bytes_in(const std::filesystem::path& sysfs_folder, int level) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(sysfs_folder, error)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    int found = 0;
    std::string type, size;
    std::ifstream(entry.path() / "level") >> found;
    std::ifstream(entry.path() / "type") >> type;
    std::ifstream(entry.path() / "size") >> size;
    if (found == level && type != "Instruction") return parse_cache_size(size);
  }
  return sysconf_cache_bytes(level);
}

std::size_t default_stream_elements() {
  const std::size_t llc = last_level_cache_bytes();
  std::size_t elements = std::max<std::size_t>(4 * (llc ? llc : 32u << 20) / sizeof(float), std::size_t{16} << 20);
  const std::uint64_t available = available_memory_bytes();
  if (available > 0) elements = std::min<std::size_t>(elements, available / 8 / (3 * sizeof(float)));
  return std::max<std::size_t>(elements, 1024);
}

std::optional<std::string> no_bf16_matmul_reason() {
  if (onednn_has_bf16_matmul()) return std::nullopt;
  return "oneDNN " + onednn_version() + " has no bf16 matmul for ISA " + effective_isa_name();
}

MatmulPeak measure_matmul_peak(OneDnnContext& ctx, const std::vector<std::int64_t>& sizes, int repetitions,
                               double seconds) {
  MatmulPeak best;
  for (const std::int64_t n : sizes) {
    MatmulOp matmul = square_matmul(ctx, n);
    // Values in [-1, 1) from a small LCG: no zeros, no denormals.
    std::vector<float> values(static_cast<std::size_t>(n * n)), product(values.size());
    std::uint32_t state = 12345;
    for (float& v : values) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.f;
    }
    matmul.bind_src(values.data());  // converted (bf16) and reordered once, outside the timing
    matmul.bind_weights(values.data());
    const double ns = median_ns_per_call([&] { matmul.run_bound(product.data()); }, repetitions, seconds);
    const double gflops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / ns;
    if (gflops > best.gflops) best = {gflops, n, matmul.impl_info()};
  }
  return best;
}

double measure_stream_gbps(int threads, std::size_t elements, int repetitions, double seconds) {
  const auto n = static_cast<std::int64_t>(elements);
  const auto a = std::make_unique_for_overwrite<float[]>(elements);
  const auto b = std::make_unique_for_overwrite<float[]>(elements);
  const auto c = std::make_unique_for_overwrite<float[]>(elements);
  float* const pa = a.get();
  const float* const pb = b.get();
  const float* const pc = c.get();
  // First touch by the threads that stream them, with the same static schedule.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = 0.f;
    b[i] = 1.f;
    c[i] = 2.f;
  }
  const float s = 3.f;
  const double ns = median_ns_per_call(
      [&] {
#pragma omp parallel for simd num_threads(threads) schedule(static)
        for (std::int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
      },
      repetitions, seconds);
  if (pa[0] != 7.f || pa[n - 1] != 7.f) throw std::runtime_error("stream triad: wrong result");
  return 3.0 * sizeof(float) * static_cast<double>(elements) / ns;
}

namespace {
// Sums a[begin, end) as four streams (its quarters, read side by side) of sixteen
// independent partial sums each: four vector add chains, so neither one add's latency nor
// one stream's prefetching bounds the loads. Vectorizable without -ffast-math; compiled
// for AVX-512, AVX2 and baseline x86-64 like the fused kernels, so that cache bandwidth is
// measured with the widest loads the CPU has.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
float sum_range(const float* __restrict a, std::int64_t begin, std::int64_t end) {
  constexpr int kStreams = 4, kLanes = 16;
  const std::int64_t quarter = (end - begin) / kStreams / kLanes * kLanes;
  const float* __restrict s0 = a + begin;
  const float* __restrict s1 = s0 + quarter;
  const float* __restrict s2 = s1 + quarter;
  const float* __restrict s3 = s2 + quarter;
  float p0[kLanes] = {}, p1[kLanes] = {}, p2[kLanes] = {}, p3[kLanes] = {};
  for (std::int64_t i = 0; i < quarter; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      p0[k] += s0[i + k];
      p1[k] += s1[i + k];
      p2[k] += s2[i + k];
      p3[k] += s3[i + k];
    }
  float total = 0.f;
  for (std::int64_t i = begin + kStreams * quarter; i < end; ++i) total += a[i];
  for (int k = 0; k < kLanes; ++k) total += (p0[k] + p1[k]) + (p2[k] + p3[k]);
  return total;
}
}  // namespace

double measure_read_gbps(int threads, std::size_t elements, int repetitions, double seconds) {
  const auto n = static_cast<std::int64_t>(elements);
  const auto data = std::make_unique_for_overwrite<float[]>(elements);
  float* const a = data.get();
  const std::int64_t passes = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / (n * 4));
  // Thread t of `count` owns [n t / count, n (t + 1) / count), the same in both regions.
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    for (std::int64_t i = n * t / count; i < n * (t + 1) / count; ++i) a[i] = 1.f;
  }
  double total = 0;
  const double ns = median_ns_per_call(
      [&] {
        double sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
        {
          const std::int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
          for (std::int64_t pass = 0; pass < passes; ++pass) {
            asm volatile("" : : "r"(a) : "memory");  // each pass reads the array again
            sum += sum_range(a, n * t / count, n * (t + 1) / count);
          }
        }
        total = sum;
      },
      repetitions, seconds);
  // Every element is 1: the sum counts the elements read (exact while a lane's sum stays below 2^24).
  const double expected = static_cast<double>(elements) * static_cast<double>(passes);
  if (!(std::abs(total - expected) <= 1e-6 * expected)) throw std::runtime_error("read-only sum: wrong result");
  return sizeof(float) * static_cast<double>(elements) * static_cast<double>(passes) / ns;
}

double measure_fork_join_us(int threads, int repetitions, double seconds) {
  int joined = threads;
  const double ns = median_ns_per_call(
      [&] {
        int count = 0;
#pragma omp parallel num_threads(threads) reduction(+ : count)
        count += 1;
        joined = std::min(joined, count);
      },
      repetitions, seconds);
  if (joined != threads)
    throw std::runtime_error("fork and join: a region of " + std::to_string(threads) + " threads ran on " +
                             std::to_string(joined));
  return ns / 1000.0;
}

std::optional<CacheRoof> measure_l3_roof(double l3_bytes, double l2_bytes_all_threads, double dram_gbps,
                                         const std::function<double(double bytes)>& read_gbps_at) {
  if (l2_bytes_all_threads <= 0) return std::nullopt;
  const double smallest = 2 * l2_bytes_all_threads;
  std::vector<CacheRoof> halvings;  // largest first
  for (double half = l3_bytes / 2; half >= smallest; half /= 2) halvings.push_back(CacheRoof{read_gbps_at(half), 2 * half});
  double fastest = 0;
  for (const CacheRoof& h : halvings) fastest = std::max(fastest, h.gbps);
  if (fastest < kCacheOverDram * dram_gbps) return std::nullopt;
  for (const CacheRoof& h : halvings)
    if (h.gbps >= kL3Plateau * fastest) return h;
  return std::nullopt;  // unreachable: the fastest passes
}

ThreadPeaks measure_peaks(int threads, const RooflineSettings& settings) {
  ThreadPeaks peaks;
  peaks.threads = threads;
  OneDnnContext f32(threads);
  peaks.f32 = measure_matmul_peak(f32, settings.matmul_sizes, settings.repetitions, settings.seconds);
  if (const auto reason = no_bf16_matmul_reason()) {
    peaks.bf16_reason = *reason;
  } else {
    OneDnnContext bf16(threads, DType::bf16);
    peaks.bf16 = measure_matmul_peak(bf16, settings.matmul_sizes, settings.repetitions, settings.seconds);
  }
  peaks.stream_elements = settings.stream_elements ? settings.stream_elements : default_stream_elements();
  peaks.gbps = measure_stream_gbps(threads, peaks.stream_elements, settings.repetitions, settings.seconds);
  peaks.read_gbps = measure_read_gbps(threads, peaks.stream_elements, settings.repetitions, settings.seconds);
  if (const std::size_t l2 = cache_bytes(2))
    peaks.l2_gbps = measure_read_gbps(threads, threads * l2 / 2 / sizeof(float), settings.repetitions, settings.seconds);
  const auto read_gbps_at = [&](double bytes) {
    return measure_read_gbps(threads, static_cast<std::size_t>(bytes) / sizeof(float), settings.repetitions,
                             settings.seconds);
  };
  if (const std::size_t l3 = cache_bytes(3))
    if (const auto roof = measure_l3_roof(static_cast<double>(l3), static_cast<double>(threads * cache_bytes(2)),
                                          *peaks.read_gbps, read_gbps_at)) {
      peaks.l3_gbps = roof->gbps;
      peaks.l3_fit_bytes = roof->fit_bytes;
    }
  if (threads > 1) peaks.fork_join_us = measure_fork_join_us(threads, settings.repetitions, settings.seconds);
  return peaks;
}

nlohmann::json roofline_json(const std::vector<ThreadPeaks>& peaks, const RooflineSettings& settings,
                             const std::string& command) {
  const nlohmann::json machine = build_and_machine();
  nlohmann::json doc;
  doc["threads"] = nlohmann::json::object();
  nlohmann::json impl = {{"f32", nullptr}, {"bf16", nullptr}};
  nlohmann::json bf16_reason = nullptr;
  std::size_t stream_elements = settings.stream_elements;
  for (const ThreadPeaks& p : peaks) {
    const auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    doc["threads"][std::to_string(p.threads)] = {{"f32_gflops", p.f32.gflops},
                                                 {"bf16_gflops", p.bf16 ? nlohmann::json(p.bf16->gflops) : nlohmann::json(nullptr)},
                                                 {"gbps", p.gbps},
                                                 {"read_gbps", optional(p.read_gbps)},
                                                 {"l2_gbps", optional(p.l2_gbps)},
                                                 {"l3_gbps", optional(p.l3_gbps)},
                                                 {"l3_fit_bytes", optional(p.l3_fit_bytes)},
                                                 {"fork_join_us", optional(p.fork_join_us)}};
    if (impl["f32"].is_null()) impl["f32"] = p.f32.impl;
    if (p.bf16 && impl["bf16"].is_null()) impl["bf16"] = p.bf16->impl;
    if (!p.bf16 && bf16_reason.is_null()) bf16_reason = p.bf16_reason;
    stream_elements = p.stream_elements;
  }
  doc["cpu_model"] = machine["cpu_model"];
  doc["cpu_id"] = machine["cpu_id"];
  doc["cores"] = machine["cores"];
  doc["host"] = machine["host"];
  doc["onednn_version"] = machine["onednn_version"];
  doc["onednn_isa"] = machine["onednn_isa"];
  doc["matmul_impl"] = impl;
  doc["caches"] = {{"l2_bytes", cache_bytes(2)}, {"l3_bytes", cache_bytes(3)}};
  doc["bf16_reason"] = bf16_reason;
  doc["method"] = {{"matmul_sizes", settings.matmul_sizes},
                   {"stream_elements", stream_elements},
                   {"repetitions", settings.repetitions},
                   {"seconds_per_repetition", settings.seconds}};
  doc["measured_utc"] = utc_now();
  doc["command"] = command;
  return doc;
}

std::string roofline_table(const std::vector<ThreadPeaks>& peaks) {
  std::ostringstream out;
  char line[224];
  std::snprintf(line, sizeof line, "%-8s %18s %18s %12s %12s %18s %10s %14s %15s\n", "threads", "f32 GFLOP/s",
                "bf16 GFLOP/s", "triad GB/s", "read GB/s", "L3 GB/s (fit)", "L2 GB/s", "ridge flop/B",
                "fork+join us");
  out << line;
  const auto optional = [](const std::optional<double>& v) { return v ? fixed(*v, 1) : std::string("n/a"); };
  for (const ThreadPeaks& p : peaks) {
    const std::string f32 = fixed(p.f32.gflops, 1) + " (n=" + std::to_string(p.f32.size) + ")";
    const std::string bf16 = p.bf16 ? fixed(p.bf16->gflops, 1) + " (n=" + std::to_string(p.bf16->size) + ")" : "n/a";
    const std::string l3 = optional(p.l3_gbps) +
                           (p.l3_fit_bytes ? " (" + fixed(*p.l3_fit_bytes / (1 << 20), 0) + " MiB)" : std::string());
    const std::string fork_join = p.fork_join_us ? fixed(*p.fork_join_us, 2) : std::string("n/a");
    std::snprintf(line, sizeof line, "%-8d %18s %18s %12s %12s %18s %10s %14s %15s\n", p.threads, f32.c_str(),
                  bf16.c_str(), fixed(p.gbps, 1).c_str(), optional(p.read_gbps).c_str(), l3.c_str(),
                  optional(p.l2_gbps).c_str(), fixed(p.f32.gflops / p.gbps, 2).c_str(), fork_join.c_str());
    out << line;
  }
  return out.str();
}

std::vector<int> parse_roofline_threads(std::string_view text) {
  const auto fail = [&](const std::string& reason) {
    return std::invalid_argument("--threads: bad value '" + std::string(text) + "': " + reason);
  };
  std::vector<std::int64_t> values;
  try {
    values = parse_int_spec(text, ',');
  } catch (const std::invalid_argument& e) {
    throw fail(e.what());
  }
  std::vector<int> threads;
  for (const std::int64_t v : values) {
    if (v < 1 || v > 1024) throw fail("a thread count must be 1 to 1024");
    threads.push_back(static_cast<int>(v));
  }
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  return threads;
}

}  // namespace attnbench
