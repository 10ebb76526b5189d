// The query of a fused score, y = scale * x W^T, by whichever is faster for its size.
#pragma once

#include <cstdint>
#include <string>
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

// Row r of part p of n parts (the rows split evenly, in order): rows [first, first + count).
struct RowRange {
  std::int64_t first = 0, count = 0;
};
RowRange even_part(std::int64_t rows, int part, int parts);

// True when a fused bf16 step's query (a FusedProjection on a bf16 context) multiplies in
// bf16, false when in f32. The environment variable ATTNBENCH_FUSED_BF16_QUERY chooses: unset,
// empty or "best" by bf16_matmul_outruns_f32(), "bf16" or "f32" that precision on any CPU (so
// that one machine checks and times both; where oneDNN has no bf16 matmul, "bf16" multiplies
// in f32 on operands rounded to bf16, OneDnnContext). Read by each projection as
// it is built; attnbench refuses a bad value at start, a projection takes it for "best".
bool fused_bf16_query_in_bf16();
// The same as meta.json's build.fused_bf16_query names it: "bf16" or "f32".
const char* fused_bf16_query_name();

// "" when ATTNBENCH_FUSED_BF16_QUERY is unset or valid, else one line naming it and its bad value.
std::string fused_bf16_query_setting_error();

// y (rows, out) = scale * x (rows, in) W^T for W = params.weight (out, in), bias-free:
// a vectorized loop over a copy of W^T when rows * in * out < kSmallProjectionMacs,
// else oneDNN: for a step on `threads` > 1 OpenMP threads (fused_step_threads), `threads`
// matmuls, one per part of the rows (even_part), each built for one thread, so that every
// thread of the step's parallel region computes its own part (run_part) and no second region
// forks and joins for the query, nor waits for the other parts (FusedAttend, when the
// scorer's fused_query_covers_part); for a serial step one matmul for one thread. Small bf16
// queries too: on 2 cores of an AMD EPYC (Zen 5, 2026-12-05), the fused bf16 step on 2 threads
// with a query of 65K to 2.9M multiply-adds in a part per thread, over one part on the first
// thread (the other waiting), alternately 4 or 5 times, paired medians 0.82 to 0.95 (mid size
// B32 L50 E512 D256 A256: additive 0.92, mlp 0.93, location 0.92). On an Intel Xeon (AMX,
// 2026-12-04), with a barrier after the query, one part had been faster at the mid size
// (location 0.81, additive 0.96); not measured there without it.
// On a bf16 context the matmul is bf16 (W converted once, x at each run) where
// fused_bf16_query_in_bf16(), else f32 (W stays f32, only the query's own bytes): on an Intel
// Xeon without AMX (family 6 model 207, 2026-12-06) the f32 query made the fused bf16 step
// 0.75x / 0.79x as long at the paper's sizes (additive, 1 / 2 threads; mlp 0.77x / 0.79x,
// both forced side by side) and 0.84x to 0.92x at the mid size (additive, mlp, location);
// README, "Fused algorithms".
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
  // True when run_part(x, y, part, parts) writes exactly the rows even_part(rows, part, parts).
  bool splits_into(int parts) const { return parts == 1 || parts == this->parts(); }
  // True when run() calls oneDNN.
  bool uses_onednn() const { return uses_onednn_; }
  // True when the oneDNN matmul multiplies in bf16 (a bf16 context where fused_bf16_query_in_bf16()).
  bool multiplies_in_bf16() const { return multiplies_in_bf16_; }
  // The parts the rows are split into (1 for the loop and a serial step's matmul).
  int parts() const { return static_cast<int>(ops_.empty() ? 1 : ops_.size()); }

 private:
  void run_range(const float* x, float* y, int op, RowRange range);

  std::int64_t rows_ = 0, in_ = 0, out_ = 0;
  float scale_ = 1.f;
  bool uses_onednn_ = false, multiplies_in_bf16_ = false;
  std::vector<LinearOp> ops_;      // one per part, each built for one thread
  std::vector<float> transposed_;  // W^T (in, out), for the loop
};

}  // namespace attnbench
