#include "core/fused_projection.hpp"

#include <omp.h>

#include <stdexcept>

#include "core/fused_kernels.hpp"

namespace attnbench {

namespace {
// OpenMP's thread count for what this thread builds and runs, for the scope's lifetime.
class OpenMpThreadsScope {
 public:
  explicit OpenMpThreadsScope(int threads) : before_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OpenMpThreadsScope() { omp_set_num_threads(before_); }
  OpenMpThreadsScope(const OpenMpThreadsScope&) = delete;
  OpenMpThreadsScope& operator=(const OpenMpThreadsScope&) = delete;

 private:
  int before_;
};
}  // namespace

FusedProjection::FusedProjection(OneDnnContext& ctx, std::int64_t rows, const LinearParams& params, int threads,
                                 float scale)
    : rows_(rows),
      in_(params.in),
      out_(params.out),
      scale_(scale),
      uses_onednn_(rows * params.in * params.out >= kSmallProjectionMacs) {
  if (!params.bias.empty()) throw std::invalid_argument("FusedProjection: the projection must have no bias");
  if (uses_onednn_) {
    // oneDNN's matmul takes its thread count from OpenMP when it is built (and the
    // primitive cache keys on it): built for one thread, it runs on one.
    const bool serial_bf16 = ctx.dtype() == DType::bf16 && rows * params.in * params.out < kSerialBf16QueryMacs;
    threads_ = serial_bf16 ? 1 : threads;
    const OpenMpThreadsScope scope(threads_);
    op_ = LinearOp(ctx, rows, params);
    return;
  }
  transposed_.resize(static_cast<std::size_t>(in_ * out_));
  for (std::int64_t o = 0; o < out_; ++o)
    for (std::int64_t i = 0; i < in_; ++i)
      transposed_[static_cast<std::size_t>(i * out_ + o)] = params.weight[static_cast<std::size_t>(o * in_ + i)];
}

void FusedProjection::run(const float* x, float* y) {
  if (uses_onednn_) {
    op_.run(x, y);
  } else {
    // y_r = sum_i x_ri (row i of W^T): whole rows, no reduction per output.
    for (std::int64_t r = 0; r < rows_; ++r)
      fused::weighted_sum_rows(x + r * in_, transposed_.data(), in_, out_, y + r * out_);
  }
  if (scale_ != 1.f)
    for (std::int64_t i = 0; i < rows_ * out_; ++i) y[i] *= scale_;
}

}  // namespace attnbench
