// The backward of y = x W^T + b (nn.Linear) on oneDNN matmuls over transposed descriptors.
#pragma once

#include <cstdint>
#include <vector>

#include "core/matmul_op.hpp"
#include "core/onednn_context.hpp"

namespace attnbench {

// For x (rows, in), W (out, in) in PyTorch's layout and dy = dLoss/dy (rows, out):
// dW += dy^T x, db += the column sums of dy, dx = dy W (or dx += dy W). f32 only.
// Example: LinearBackward back(ctx, B, D, A, false, false); back.run(s, dq, W.data(), dW, nullptr, ds);
class LinearBackward {
 public:
  LinearBackward() = default;
  LinearBackward(OneDnnContext& ctx, std::int64_t rows, std::int64_t in, std::int64_t out, bool bias,
                 bool accumulate_dx);

  // Any of dW, db, dx may be nullptr (not computed); db needs `bias`. Allocates nothing.
  void run(const float* x, const float* dy, const float* W, float* dW, float* db, float* dx);

 private:
  MatmulOp weight_grad_, bias_grad_, input_grad_;
  std::vector<float> ones_;  // (1, rows): the column sums as a product
};

// Scatter-adds rows of d (n, dim) into table (vocab, dim) at rows tokens[i]: the
// gradient of an embedding lookup.
void embedding_backward(const float* d, const std::int64_t* tokens, std::int64_t n, std::int64_t dim, float* table);

}  // namespace attnbench
