// e[b, j] = scale * keys[b, j, :] . query[b, :] as one batched oneDNN matmul.
#pragma once

#include <cmath>
#include <span>
#include <vector>

#include "core/matmul_op.hpp"
#include "core/onednn_context.hpp"

namespace attnbench {

// Scores of cached keys (B, L, K) against one query per example (B, K).
class BatchedDot {
 public:
  BatchedDot() = default;
  BatchedDot(OneDnnContext& ctx, std::int64_t batch, std::int64_t src_len, std::int64_t width, float scale)
      : op_(ctx, plain_desc({batch, src_len, width}), plain_desc({batch, width, 1}), plain_desc({batch, src_len, 1}),
            scale == 1.f ? dnnl::primitive_attr() : eltwise_attr(dnnl::algorithm::eltwise_linear, scale, 0.f)) {}

  // Binds the keys for the runs that follow (on bf16 they are converted once, here).
  void bind_keys(const float* keys) { op_.bind_src(keys); }
  // Writes e for `query` against the bound keys.
  void run(const float* query, float* e) { op_.run_with_bound_src(query, e); }

  // The same in double: keys (B, L, K), query (B, K) -> e (B, L).
  static std::vector<double> reference(std::span<const double> keys, std::span<const double> query,
                                       std::int64_t batch, std::int64_t src_len, std::int64_t width, double scale) {
    std::vector<double> e(static_cast<std::size_t>(batch * src_len));
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t j = 0; j < src_len; ++j) {
        double sum = 0.0;
        for (std::int64_t k = 0; k < width; ++k)
          sum += keys[static_cast<std::size_t>((b * src_len + j) * width + k)] *
                 query[static_cast<std::size_t>(b * width + k)];
        e[static_cast<std::size_t>(b * src_len + j)] = sum * scale;
      }
    return e;
  }

 private:
  MatmulOp op_;
};

// The backward of BatchedDot: for e = scale * keys (B, L, K) . query (B, K) and de (B, L),
// dquery = scale * sum_j de_j keys_j (written) and dkeys += scale * de_j query (accumulated).
class BatchedDotBackward {
 public:
  BatchedDotBackward() = default;
  BatchedDotBackward(OneDnnContext& ctx, std::int64_t batch, std::int64_t src_len, std::int64_t width, float scale)
      : query_grad_(ctx, plain_desc({batch, 1, src_len}), plain_desc({batch, src_len, width}),
                    plain_desc({batch, 1, width}), scaled_attr(scale, false)),
        keys_grad_(ctx, plain_desc({batch, src_len, 1}), plain_desc({batch, 1, width}),
                   plain_desc({batch, src_len, width}), scaled_attr(scale, true)) {}

  void run(const float* keys, const float* query, const float* de, float* dquery, float* dkeys) {
    query_grad_.run(de, keys, dquery);
    keys_grad_.run(de, query, dkeys);
  }

 private:
  MatmulOp query_grad_, keys_grad_;
};

}  // namespace attnbench
