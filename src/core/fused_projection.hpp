// The query of a fused score, y = scale * x W^T, by whichever is faster for its size.
#pragma once

#include <cstdint>
#include <vector>

#include "core/matmul_op.hpp"
#include "core/onednn_context.hpp"
#include "core/param_source.hpp"

namespace attnbench {

// Below this many multiply-adds (rows * in * out) a plain loop beats a oneDNN call,
// whose fixed cost is about 0.3 us (measured break-even on a 2-core AMD EPYC VM, 2026-11-30,
// family not recorded, 1 and 2 threads: the loop is 3.6x faster at the lesson's 1280, even
// at 8192, 2x slower at 64K).
inline constexpr std::int64_t kSmallProjectionMacs = 8 * 1024;

// Below this many multiply-adds a bf16 query is built for one thread even in a parallel step:
// oneDNN converts s to bf16 (a reorder) and then multiplies, and on two threads each of the
// two pays a fork and a join (on AMX also the tiles' set-up) for a few microseconds of work.
// Measured with the fused bf16 step on 2 threads, the query on 1 against on 2, alternately
// 2 or 3 times: on 2 cores of an Intel Xeon (AMX, 2026-12-04) at the mid size (B32 D256)
// location (410K) 0.81, dot and additive (2.1M) 0.95 and 0.96; location at B80 D1000 L50
// (4.0M) 1.04, dot at B32 D=A=362 (4.2M) 0.97 to 1.09; dot and additive at 8.4M 0.99 to 1.07,
// at 21M and 80M 1.03 to 1.33. On 2 cores of an AMD EPYC (Zen 5, AVX512-BF16 without AMX,
// 2026-12-05, paired medians of 3 alternations): at the mid size location 0.65, dot 0.84,
// mlp 0.88, additive 0.94; location at B32 D362 (580K) 0.78, dot at D=A=362 (4.2M) 0.91;
// location at B80 D1000 L50 (4.0M) 1.11; dot and additive at 80M 1.31 and 1.25.
// An f32 query keeps a part per thread: at the mid size one thread made the step 1.12x to
// 1.21x slower on the Xeon, dot's 1.12x on the Zen 5.
inline constexpr std::int64_t kSerialBf16QueryMacs = 3 * 1024 * 1024;

// Row r of part p of n parts (the rows split evenly, in order): rows [first, first + count).
struct RowRange {
  std::int64_t first = 0, count = 0;
};
RowRange even_part(std::int64_t rows, int part, int parts);

// y (rows, out) = scale * x (rows, in) W^T for W = params.weight (out, in), bias-free:
// a vectorized loop over a copy of W^T when rows * in * out < kSmallProjectionMacs,
// else oneDNN: for a step on `threads` > 1 OpenMP threads (fused_step_threads), `threads`
// matmuls, one per part of the rows (even_part), each built for one thread, so that every
// thread of the step's parallel region computes its own part (run_part) and no second region
// forks and joins for the query; for a serial step, or when the context is bf16 and
// rows * in * out < kSerialBf16QueryMacs, one matmul for one thread.
// Example: FusedProjection q(ctx, B, W, fused_step_threads(ctx.threads(), shape, work), 0.125f);
class FusedProjection {
 public:
  FusedProjection() = default;
  FusedProjection(OneDnnContext& ctx, std::int64_t rows, const LinearParams& params, int threads,
                  float scale = 1.f);

  // Writes y from x, every row on the calling thread; allocates nothing.
  void run(const float* x, float* y);
  // Writes the rows of part `part` of `parts` when the projection has `parts` parts, and
  // every row for part 0 otherwise (the other parts then write nothing), on the calling
  // thread, and returns the rows it wrote: `parts` threads calling it with parts 0 to
  // parts - 1 write all of y between them. Allocates nothing.
  RowRange run_part(const float* x, float* y, int part, int parts);
  // True when run() calls oneDNN.
  bool uses_onednn() const { return uses_onednn_; }
  // The parts the rows are split into (1 for the loop and a serial matmul).
  int parts() const { return static_cast<int>(ops_.empty() ? 1 : ops_.size()); }

 private:
  void run_range(const float* x, float* y, int op, RowRange range);

  std::int64_t rows_ = 0, in_ = 0, out_ = 0;
  float scale_ = 1.f;
  bool uses_onednn_ = false;
  std::vector<LinearOp> ops_;      // one per part, each built for one thread
  std::vector<float> transposed_;  // W^T (in, out), for the loop
};

}  // namespace attnbench
