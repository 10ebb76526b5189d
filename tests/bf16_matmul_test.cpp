// LinearOp and MatmulOp on a bf16 context compute exactly "round both inputs to bf16,
// multiply, accumulate in f32": against a double product of the bf16-rounded inputs
// they meet the f32 tolerance, against the unrounded inputs they do not. Where oneDNN has no
// bf16 matmul they run an f32 one on the rounded inputs (CTest bf16_as_rounded_f32 runs these
// tests so on every CPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/matmul_op.hpp"
#include "core/onednn_context.hpp"
#include "test_support.hpp"

namespace attnbench {
namespace {

using test::count;
using test::near_reference;
using test::random_floats;

// x rounded to the nearest bf16 (ties to even), as oneDNN's f32 -> bf16 reorder does.
float to_bf16(float x) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return std::bit_cast<float>(bits & 0xffff0000u);
}

std::vector<float> rounded(std::vector<float> v) {
  for (float& x : v) x = to_bf16(x);
  return v;
}

// y = act(x W^T + b) in double: x (rows, in), W (out, in), b (out) or empty.
std::vector<double> linear_reference(const std::vector<float>& x, const LinearParams& W, std::int64_t rows,
                                     bool with_tanh) {
  std::vector<double> y(count(rows * W.out));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < W.out; ++o) {
      double sum = W.bias.empty() ? 0.0 : W.bias[count(o)];
      for (std::int64_t i = 0; i < W.in; ++i)
        sum += static_cast<double>(x[count(r * W.in + i)]) * W.weight[count(o * W.in + i)];
      y[count(r * W.out + o)] = with_tanh ? std::tanh(sum) : sum;
    }
  return y;
}

// A Linear(in, out) with bias whose values fill [-1, 1) from `seed`.
LinearParams random_linear(std::int64_t in, std::int64_t out, std::uint32_t seed) {
  return {in, out, random_floats(count(in * out), seed), random_floats(count(out), seed + 1)};
}

// oneDNN 2.6 has a bf16 matmul from avx512_core on (a missing one there is a bug) and none
// below it (an AMD EPYC Zen 3, or ONEDNN_MAX_CPU_ISA=AVX2).
TEST(Bf16Context, OneDnnHasABf16MatmulFromAvx512CoreOn) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512_core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  EXPECT_EQ(onednn_has_bf16_matmul(), (isa & avx512_core) == avx512_core) << effective_isa_name();
}

TEST(Bf16Context, CarriesItsDtype) {
  EXPECT_EQ(OneDnnContext(1).dtype(), DType::f32);
  EXPECT_EQ(OneDnnContext(1, DType::bf16).dtype(), DType::bf16);
}

class Bf16Linear : public ::testing::TestWithParam<bool> {};  // with tanh or not

TEST_P(Bf16Linear, RoundsInputsAndWeightsToBf16AndAccumulatesInF32) {
  const bool with_tanh = GetParam();
  const std::int64_t rows = 7, in = 33, out = 17;
  const LinearParams W = random_linear(in, out, 1);
  LinearParams W_bf16 = W;
  W_bf16.weight = rounded(W.weight);  // the bias stays f32
  OneDnnContext ctx(1, DType::bf16);
  LinearOp op(ctx, rows, W, with_tanh ? dnnl::algorithm::eltwise_tanh : dnnl::algorithm::undef);
  std::vector<float> y(count(rows * out));
  // Two runs on different inputs: each run converts its own input.
  for (std::uint32_t seed : {3u, 4u}) {
    SCOPED_TRACE("input seed " + std::to_string(seed));
    const std::vector<float> x = random_floats(count(rows * in), seed);
    op.run(x.data(), y.data());
    EXPECT_TRUE(near_reference("y", y, linear_reference(rounded(x), W_bf16, rows, with_tanh)));
    EXPECT_FALSE(near_reference("y against unrounded inputs", y, linear_reference(x, W, rows, with_tanh)));
  }
}

TEST_P(Bf16Linear, F32ContextKeepsF32) {
  const bool with_tanh = GetParam();
  const std::int64_t rows = 7, in = 33, out = 17;
  const LinearParams W = random_linear(in, out, 1);
  OneDnnContext ctx(1);
  LinearOp op(ctx, rows, W, with_tanh ? dnnl::algorithm::eltwise_tanh : dnnl::algorithm::undef);
  const std::vector<float> x = random_floats(count(rows * in), 3);
  std::vector<float> y(count(rows * out));
  op.run(x.data(), y.data());
  EXPECT_TRUE(near_reference("y", y, linear_reference(x, W, rows, with_tanh)));
}

INSTANTIATE_TEST_SUITE_P(TanhOrNot, Bf16Linear, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "tanh" : "plain"; });

// dst[b] = src[b] (M, K) x weights[b] (K, N) in double, the weights stored with the
// given strides (elements) of their (B, K, N) dims.
std::vector<double> batched_reference(const std::vector<float>& src, const std::vector<float>& weights,
                                      std::int64_t B, std::int64_t M, std::int64_t K, std::int64_t N,
                                      const dnnl::memory::dims& weight_strides) {
  std::vector<double> dst(count(B * M * N));
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double sum = 0.0;
        for (std::int64_t k = 0; k < K; ++k)
          sum += static_cast<double>(src[count((b * M + m) * K + k)]) *
                 weights[count(b * weight_strides[0] + k * weight_strides[1] + n * weight_strides[2])];
        dst[count((b * M + m) * N + n)] = sum;
      }
  return dst;
}

struct BatchedShape {
  const char* name;
  std::int64_t B, M, K, N;
  bool transposed_weights;  // weights stored as (B, N, K), i.e. strided
};

class Bf16Matmul : public ::testing::TestWithParam<BatchedShape> {};

TEST_P(Bf16Matmul, ConvertsBothActivationOperandsEveryRun) {
  const auto [name, B, M, K, N, transposed] = GetParam();
  const dnnl::memory::dims strides = transposed ? dnnl::memory::dims{N * K, 1, K} : dnnl::memory::dims{K * N, N, 1};
  const dnnl::memory::desc weights_desc({B, K, N}, dnnl::memory::data_type::f32, strides);
  OneDnnContext ctx(2, DType::bf16);
  MatmulOp op(ctx, plain_desc({B, M, K}), weights_desc, plain_desc({B, M, N}));
  std::vector<float> dst(count(B * M * N));
  for (std::uint32_t seed : {5u, 7u}) {
    SCOPED_TRACE("input seed " + std::to_string(seed));
    const std::vector<float> src = random_floats(count(B * M * K), seed);
    const std::vector<float> weights = random_floats(count(B * K * N), seed + 1);
    op.run(src.data(), weights.data(), dst.data());
    EXPECT_TRUE(near_reference("dst", dst, batched_reference(rounded(src), rounded(weights), B, M, K, N, strides)));
    EXPECT_FALSE(near_reference("dst against unrounded inputs", dst,
                                batched_reference(src, weights, B, M, K, N, strides)));
  }
}

TEST_P(Bf16Matmul, ABoundOperandIsConvertedOnceAtBinding) {
  const auto [name, B, M, K, N, transposed] = GetParam();
  const dnnl::memory::dims strides = transposed ? dnnl::memory::dims{N * K, 1, K} : dnnl::memory::dims{K * N, N, 1};
  const dnnl::memory::desc weights_desc({B, K, N}, dnnl::memory::data_type::f32, strides);
  OneDnnContext ctx(1, DType::bf16);
  MatmulOp op(ctx, plain_desc({B, M, K}), weights_desc, plain_desc({B, M, N}));
  std::vector<float> src = random_floats(count(B * M * K), 11);
  std::vector<float> weights = random_floats(count(B * K * N), 12);
  std::vector<float> each_run(count(B * M * N)), bound(each_run.size());
  op.run(src.data(), weights.data(), each_run.data());

  op.bind_src(src.data());
  const std::vector<float> src_at_binding = src;
  std::fill(src.begin(), src.end(), 1e30f);  // not read again: the bf16 copy was made at binding
  op.run_with_bound_src(weights.data(), bound.data());
  EXPECT_EQ(bound, each_run);

  src = src_at_binding;
  op.bind_weights(weights.data());
  std::fill(weights.begin(), weights.end(), 1e30f);
  op.run_with_bound_weights(src.data(), bound.data());
  EXPECT_EQ(bound, each_run);
}

TEST(F32Matmul, ABoundOperandIsReadAtEveryRun) {
  OneDnnContext ctx(1);
  MatmulOp op(ctx, plain_desc({1, 2, 3}), plain_desc({1, 3, 1}), plain_desc({1, 2, 1}));
  std::vector<float> keys = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  const std::vector<float> query = {1.f, 0.f, -1.f};
  std::vector<float> e(2);
  op.bind_src(keys.data());
  op.run_with_bound_src(query.data(), e.data());
  EXPECT_EQ(e, (std::vector<float>{-2.f, -2.f}));
  keys[0] = 11.f;  // f32 binds the buffer itself
  op.run_with_bound_src(query.data(), e.data());
  EXPECT_EQ(e, (std::vector<float>{8.f, -2.f}));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Bf16Matmul,
    ::testing::Values(BatchedShape{"batched_dot", 3, 17, 33, 1, false},  // keys (B, L, A) x query (B, A, 1)
                      BatchedShape{"context", 3, 1, 17, 34, false},      // alpha (B, 1, L) x H (B, L, E)
                      BatchedShape{"strided_weights", 2, 5, 33, 9, true}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace attnbench
