// Random streams: PyTorch's CPU generator (bit-exact) and a fast counter-based one.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>

namespace attnbench {

// Reproduces torch.manual_seed(S) followed by CPU draws, as in spec/torch-init.md.
// Example: TorchGenerator g(0); g.randn(out);  // == torch.randn(out.size()) after manual_seed(0)
// randn of 16 or more values is bit-identical to torch 1.13's AVX2 CPU kernel, the
// one Debian's python3-torch dispatches on an AVX2 machine (see
// core/torch_avx_math.hpp); tests/torch_randn_exact.py checks that, and randn of
// fewer than 16 values (double Box-Muller through libm), bit for bit. A torch build
// or machine that dispatches the default, non-AVX2 kernel computes the >= 16
// transform with libm's logf / cosf / sinf instead, and some of its values differ
// from ours by a few float ulps.
class TorchGenerator {
 public:
  explicit TorchGenerator(std::uint64_t seed);

  // Fills out like tensor.uniform_(from, to) on a contiguous float tensor.
  void uniform(std::span<float> out, double from, double to);
  // Fills out like torch.randn / normal_(0, 1) on a contiguous float tensor.
  void randn(std::span<float> out);
  // Fills out like torch.randint(low, high, shape) (int64).
  void randint(std::span<std::int64_t> out, std::int64_t low, std::int64_t high);

 private:
  std::uint32_t next32() { return static_cast<std::uint32_t>(engine_()); }
  float uniform_float(double from, double to);
  double uniform_double();
  double normal_double();  // the numel < 16 path, with PyTorch's cached second sample
  void normal_fill_16(float* data);  // normal_fill_16_AVX2: Box-Muller on 8 pairs (j, j + 8)

  std::mt19937 engine_;
  std::optional<double> next_double_normal_;
};

// A fast, order-independent stream: element i of stream k is a pure function of
// (seed, k, i), so tensors can be filled in parallel. Not PyTorch-compatible.
class CounterGenerator {
 public:
  explicit CounterGenerator(std::uint64_t seed) : seed_(seed) {}

  void uniform(std::span<float> out, double from, double to);
  void randn(std::span<float> out);
  void randint(std::span<std::int64_t> out, std::int64_t low, std::int64_t high);

 private:
  std::uint64_t bits(std::uint64_t stream, std::uint64_t index) const;
  std::uint64_t seed_;
  std::uint64_t stream_ = 0;
};

}  // namespace attnbench
