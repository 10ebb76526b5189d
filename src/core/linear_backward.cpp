#include "core/linear_backward.hpp"

#include <stdexcept>

namespace attnbench {

LinearBackward::LinearBackward(OneDnnContext& ctx, std::int64_t rows, std::int64_t in, std::int64_t out, bool bias,
                               bool accumulate_dx) {
  if (ctx.dtype() != DType::f32) throw std::invalid_argument("--dtype: training supports f32 only");
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc dy_t({out, rows}, dt::f32, dnnl::memory::dims{1, out});  // dy (rows, out) read as (out, rows)
  weight_grad_ = MatmulOp(ctx, dy_t, plain_desc({rows, in}), plain_desc({out, in}), scaled_attr(1.f, true));
  input_grad_ = MatmulOp(ctx, plain_desc({rows, out}), plain_desc({out, in}), plain_desc({rows, in}),
                         scaled_attr(1.f, accumulate_dx));
  if (bias) {
    bias_grad_ = MatmulOp(ctx, plain_desc({1, rows}), plain_desc({rows, out}), plain_desc({1, out}),
                          scaled_attr(1.f, true));
    ones_.assign(static_cast<std::size_t>(rows), 1.f);
  }
}

void LinearBackward::run(const float* x, const float* dy, const float* W, float* dW, float* db, float* dx) {
  if (dW) weight_grad_.run(dy, x, dW);
  if (db) bias_grad_.run(ones_.data(), dy, db);
  if (dx) input_grad_.run(dy, W, dx);
}

void embedding_backward(const float* d, const std::int64_t* tokens, std::int64_t n, std::int64_t dim, float* table) {
  for (std::int64_t i = 0; i < n; ++i) {
    float* row = table + tokens[i] * dim;
    const float* src = d + i * dim;
    for (std::int64_t k = 0; k < dim; ++k) row[k] += src[k];
  }
}

}  // namespace attnbench
