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

// y (rows, out) = scale * x (rows, in) W^T for W = params.weight (out, in), bias-free:
// a vectorized loop over a copy of W^T when rows * in * out < kSmallProjectionMacs,
// else a LinearOp built for `threads` OpenMP threads: those of the step it serves
// (fused_step_threads), so that a step that runs on one thread does not pay OpenMP's fork
// and join for its query either.
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
