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
// An f32 query keeps both threads: it is one primitive, and at the mid size one thread made
// the step 1.12x to 1.21x slower on the Xeon, dot's 1.12x on the Zen 5.
inline constexpr std::int64_t kSerialBf16QueryMacs = 3 * 1024 * 1024;

// y (rows, out) = scale * x (rows, in) W^T for W = params.weight (out, in), bias-free:
// a vectorized loop over a copy of W^T when rows * in * out < kSmallProjectionMacs,
// else a LinearOp built for `threads` OpenMP threads: those of the step it serves
// (fused_step_threads), so that a step that runs on one thread does not pay OpenMP's fork
// and join for its query either; or for one thread when the context is bf16 and
// rows * in * out < kSerialBf16QueryMacs.
// Example: FusedProjection q(ctx, B, W, fused_step_threads(ctx.threads(), shape, work), 0.125f);
class FusedProjection {
 public:
  FusedProjection() = default;
  FusedProjection(OneDnnContext& ctx, std::int64_t rows, const LinearParams& params, int threads,
                  float scale = 1.f);

  // Writes y from x; allocates nothing.
  void run(const float* x, float* y);
  // True when run() calls oneDNN.
  bool uses_onednn() const { return uses_onednn_; }
  // The OpenMP threads the oneDNN call was built for (1 for the loop).
  int threads() const { return threads_; }

 private:
  std::int64_t rows_ = 0, in_ = 0, out_ = 0;
  float scale_ = 1.f;
  bool uses_onednn_ = false;
  int threads_ = 1;
  LinearOp op_;
  std::vector<float> transposed_;  // W^T (in, out), for the loop
};

}  // namespace attnbench
