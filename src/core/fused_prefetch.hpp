// What the fused kernels' row loops prefetch: rows of their own ahead (BlockPrefetch for a
// loop over blocks of 4 rows, StreamPrefetch for one that reads them in order) and the rows
// of the pass after them (PrefetchAlong, spread over the loop by SpreadPrefetch).
#pragma once

#include <algorithm>
#include <cstdint>

namespace attnbench::fused {

// From this many bytes a pass's rows (as stored: f32 or bf16) are taken to stream from DRAM,
// and the loops prefetch them; below, they stay in the caches between steps, where the
// prefetches only cost. Measured on 2 cores of an AMD EPYC (Zen 5), 2026-12-02, the step with
// each prefetch over without, alternately: the bf16 context's 0.56 to 0.95 (paired medians) at
// the paper's sizes (16 MB; dot, general, location, additive, 1 and 2 threads), 1.02 to 1.13
// at the mid size (1.6 MB); the score pass's of the annotations, additive and mlp at the
// paper's sizes (32 MB in f32), 0.82 to 0.94 in f32 (1 and 2 threads), 0.89 and 0.91 in bf16
// on 1 thread and 1.00 on 2 (6 to 8 times), at the mid size (3.3 MB in f32) 0.99 to 1.07. On a
// Zen 4, 2026-12-03, the tanh loop's prefetch of its keys at the mid size (L 100: 3.3 MB) 1.05
// to 1.10 of the time without, 1 thread, alternately four times.
inline constexpr double kStreamedBytes = 8.0 * 1024 * 1024;

// True when rows of `bytes` in all take kStreamedBytes or more.
inline bool streams_from_dram(double bytes) { return bytes >= kStreamedBytes; }

// What a loop over blocks of 4 rows prefetches: while it works on rows j..j+3 of `rows`
// (`readable` rows of row_bytes each), the block about 16 KiB ahead: 16 KiB / row_bytes rows
// (rounded down), rounded up to whole blocks of 4, at least 4 rows.
// Measured on a 2-core AMD EPYC (Zen 5) at the paper's sizes: 4 or 8 rows of 4 KB ahead
// alike, 2 slower. Example: BlockPrefetch ahead(rows, width * 4, readable); ahead.of(j).
class BlockPrefetch {
 public:
  BlockPrefetch(const void* rows, std::int64_t row_bytes, std::int64_t readable)
      : rows_(static_cast<const char*>(rows)),
        row_bytes_(row_bytes),
        readable_(readable),
        ahead_(std::max<std::int64_t>(4, (kBytesAhead / std::max<std::int64_t>(1, row_bytes) + 3) / 4 * 4)) {}

  // The first byte of the block to prefetch while rows j..j+3 are worked on (its rows
  // row_bytes() apart), or nullptr when that block does not lie within the readable rows.
  const char* of(std::int64_t j) const {
    return j + ahead_ + 4 <= readable_ ? rows_ + (j + ahead_) * row_bytes_ : nullptr;
  }
  std::int64_t row_bytes() const { return row_bytes_; }

 private:
  static constexpr std::int64_t kBytesAhead = 16 * 1024;
  const char* rows_;
  std::int64_t row_bytes_, readable_, ahead_;
};

// What a loop that reads its rows as one sequential stream prefetches: with the stream at
// `at`, the same bytes kBytesAhead further on, within the `readable` bytes from `begin`.
// Measured with the row-at-a-time tanh loop on a 2-core AMD EPYC (Zen 4) at the paper's
// sizes (keys of 16 MB): f32 0.75 of the time without on 1 thread. Example:
// StreamPrefetch ahead(rows, readable * row_bytes); per block: ahead.request(row + k, block_bytes);
class StreamPrefetch {
 public:
  StreamPrefetch(const void* begin, std::int64_t readable)
      : end_(static_cast<const char*>(begin) + std::max<std::int64_t>(0, readable)) {}

  // Prefetches (into every cache level, like _MM_HINT_T0) the lines of range(at, bytes).
  [[gnu::always_inline]] void request(const void* at, std::int64_t bytes) const {
    const Range ahead = range(at, bytes);
    for (const char* line = ahead.begin; line < ahead.end; line += kLine) __builtin_prefetch(line, 0, 3);
  }

  // [at + kBytesAhead, at + kBytesAhead + bytes) cut at the readable bytes' end (empty
  // beyond it), `at` within the readable bytes.
  struct Range {
    const char *begin, *end;
  };
  [[gnu::always_inline]] Range range(const void* at, std::int64_t bytes) const {
    const char* from = static_cast<const char*>(at);
    if (end_ - from <= kBytesAhead) return {end_, end_};
    return {from + kBytesAhead, from + kBytesAhead + std::min(bytes, end_ - from - kBytesAhead)};
  }

  static constexpr std::int64_t kBytesAhead = 16 * 1024;

 private:
  static constexpr std::int64_t kLine = 64;
  const char* end_;
};

// Bytes a loop requests while it works, for the pass that follows it (e.g. an example's
// annotations while its scores are computed, for its context); empty by default.
struct PrefetchAlong {
  const void* begin = nullptr;
  std::int64_t bytes = 0;
};

// Requests PrefetchAlong's cache lines evenly over a loop of `steps` steps: each step()
// prefetches the next ceil(lines / steps) lines not yet requested, so the last step has
// requested them all (none when steps is 0). Nothing is read: the range may hold anything.
// Example: SpreadPrefetch along(next_pass, blocks); per block: along.step();
class SpreadPrefetch {
 public:
  SpreadPrefetch(PrefetchAlong along, std::int64_t steps)
      : first_(reinterpret_cast<std::uintptr_t>(along.begin) / kLine * kLine),
        bytes_(along.bytes > 0
                   ? static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(along.begin) - first_) + along.bytes
                   : 0),
        per_step_(steps > 0 ? ceil_div(ceil_div(bytes_, kLine), steps) : 0) {}

  // Prefetches this step's lines (into every cache level, like _MM_HINT_T0).
  [[gnu::always_inline]] void step() {
    for (std::int64_t i = 0; i < per_step_ && next_ < bytes_; ++i, next_ += kLine)
      __builtin_prefetch(reinterpret_cast<const char*>(first_ + static_cast<std::uintptr_t>(next_)), 0, 3);
  }
  // Bytes of the range (from its first line's start) not yet requested.
  std::int64_t remaining() const { return std::max<std::int64_t>(0, bytes_ - next_); }

 private:
  static constexpr std::int64_t kLine = 64;
  static std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
  std::uintptr_t first_;  // the address of the range's first line
  std::int64_t bytes_, per_step_, next_ = 0;
};

}  // namespace attnbench::fused
