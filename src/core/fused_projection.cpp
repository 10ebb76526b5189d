#include "core/fused_projection.hpp"

#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include "core/env_choice.hpp"
#include "core/fused_kernels.hpp"

namespace attnbench {

namespace {
constexpr const char* kBf16QueryVariable = "ATTNBENCH_FUSED_BF16_QUERY";
// The setting's values: the default, then the two precisions it may force.
constexpr EnvValue kBf16QueryValues[] = {
    {"best", "the default: bf16 where oneDNN's bf16 matmul outruns its f32 one, else f32"},
    {"bf16", "multiply in bf16"},
    {"f32", "multiply in f32"}};

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

// The context of the f32 queries of bf16 steps (one engine and stream for the process, as
// the parts of one step share their context's): built once, on first use, for one thread.
OneDnnContext& f32_query_context() {
  static OneDnnContext ctx(1);
  return ctx;
}
}  // namespace

bool fused_bf16_query_in_bf16() {
  const std::string_view setting = env_value(kBf16QueryVariable);
  if (setting == kBf16QueryValues[1].value) return true;
  if (setting == kBf16QueryValues[2].value) return false;
  return bf16_matmul_outruns_f32();  // best, or a value attnbench refuses
}

const char* fused_bf16_query_name() {
  return (fused_bf16_query_in_bf16() ? kBf16QueryValues[1] : kBf16QueryValues[2]).value.data();
}

std::string fused_bf16_query_setting_error() { return env_choice_error(kBf16QueryVariable, kBf16QueryValues); }

RowRange even_part(std::int64_t rows, int part, int parts) {
  const std::int64_t first = rows * part / parts;
  return {first, rows * (part + 1) / parts - first};
}

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
    const int parts = static_cast<int>(std::min<std::int64_t>(std::max(1, threads), rows));
    const OpenMpThreadsScope scope(1);
    multiplies_in_bf16_ = ctx.dtype() == DType::bf16 && fused_bf16_query_in_bf16();
    OneDnnContext& matmul_ctx = ctx.dtype() == DType::bf16 && !multiplies_in_bf16_ ? f32_query_context() : ctx;
    ops_.reserve(static_cast<std::size_t>(parts));
    for (int part = 0; part < parts; ++part) ops_.emplace_back(matmul_ctx, even_part(rows, part, parts).count, params);
    return;
  }
  transposed_.resize(static_cast<std::size_t>(in_ * out_));
  for (std::int64_t o = 0; o < out_; ++o)
    for (std::int64_t i = 0; i < in_; ++i)
      transposed_[static_cast<std::size_t>(i * out_ + o)] = params.weight[static_cast<std::size_t>(o * in_ + i)];
}

void FusedProjection::run(const float* x, float* y) {
  for (int part = 0; part < parts(); ++part) run_range(x, y, part, even_part(rows_, part, parts()));
}

RowRange FusedProjection::run_part(const float* x, float* y, int part, int parts) {
  if (parts == this->parts()) {
    const RowRange range = even_part(rows_, part, parts);
    run_range(x, y, part, range);
    return range;
  }
  if (part != 0) return {};
  run(x, y);
  return {0, rows_};
}

void FusedProjection::run_range(const float* x, float* y, int op, RowRange range) {
  const float* x_rows = x + range.first * in_;
  float* y_rows = y + range.first * out_;
  if (uses_onednn_) {
    ops_[static_cast<std::size_t>(op)].run(x_rows, y_rows);
  } else {
    // y_r = sum_i x_ri (row i of W^T): whole rows, no reduction per output.
    for (std::int64_t r = 0; r < range.count; ++r)
      fused::weighted_sum_rows(x_rows + r * in_, transposed_.data(), in_, out_, y_rows + r * out_);
  }
  if (scale_ != 1.f)
    for (std::int64_t i = 0; i < range.count * out_; ++i) y_rows[i] *= scale_;
}

}  // namespace attnbench
