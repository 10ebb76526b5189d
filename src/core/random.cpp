#include "core/random.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/torch_avx_math.hpp"

namespace attnbench {

TorchGenerator::TorchGenerator(std::uint64_t seed) : engine_(static_cast<std::uint32_t>(seed)) {}

float TorchGenerator::uniform_float(double from, double to) {
  // PyTorch rounds the bounds to float, then computes in double.
  const double lo = static_cast<float>(from), hi = static_cast<float>(to);
  const double x = static_cast<double>(next32() & 0xFFFFFFu) * std::ldexp(1.0, -24);
  return static_cast<float>(x * (hi - lo) + lo);
}

double TorchGenerator::uniform_double() {
  const std::uint64_t hi = next32();
  const std::uint64_t lo = next32();
  const std::uint64_t r = (hi << 32) | lo;
  return static_cast<double>(r & ((std::uint64_t{1} << 53) - 1)) * std::ldexp(1.0, -53);
}

double TorchGenerator::normal_double() {
  if (next_double_normal_) {
    const double cached = *next_double_normal_;
    next_double_normal_.reset();
    return cached;
  }
  const double u1 = uniform_double();
  const double u2 = uniform_double();
  const double radius = std::sqrt(-2.0 * std::log1p(-u2));
  const double theta = 2.0 * std::numbers::pi * u1;
  next_double_normal_ = radius * std::sin(theta);
  return radius * std::cos(theta);
}

void TorchGenerator::uniform(std::span<float> out, double from, double to) {
  for (float& x : out) x = uniform_float(from, to);
}

void TorchGenerator::normal_fill_16(float* data) {
  // normal_fill_16_AVX2: lane j of the 8-wide vectors pairs data[j] with data[j + 8].
  const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - data[j];
    const float u2 = data[j + 8];
    const float radius = std::sqrt(-2.0f * torch_avx::log256(u1));
    const float theta = two_pi * u2;
    float sin_theta = 0.0f, cos_theta = 0.0f;
    torch_avx::sincos256(theta, sin_theta, cos_theta);
    // PyTorch stores fma(n, std = 1, mean = 0): exactly n, except that -0 becomes +0
    // (the same whether or not our compiler fuses this multiply and add).
    data[j] = radius * cos_theta + 0.0f;
    data[j + 8] = radius * sin_theta + 0.0f;
  }
}

void TorchGenerator::randn(std::span<float> out) {
  const std::size_t n = out.size();
  if (n < 16) {
    for (float& x : out) x = static_cast<float>(normal_double());
    return;
  }
  uniform(out, 0.0, 1.0);
  for (std::size_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out.data() + i);
  if (n % 16 != 0) {
    float* tail = out.data() + (n - 16);
    uniform(std::span<float>(tail, 16), 0.0, 1.0);
    normal_fill_16(tail);
  }
}

void TorchGenerator::randint(std::span<std::int64_t> out, std::int64_t low, std::int64_t high) {
  if (high <= low) throw std::invalid_argument("randint: empty range");
  const auto range = static_cast<std::uint64_t>(high - low);
  for (std::int64_t& x : out) x = low + static_cast<std::int64_t>(next32() % range);
}

std::uint64_t CounterGenerator::bits(std::uint64_t stream, std::uint64_t index) const {
  // splitmix64 of a key mixing seed, stream and index.
  std::uint64_t z = seed_ * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + index + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void CounterGenerator::uniform(std::span<float> out, double from, double to) {
  const std::uint64_t stream = stream_++;
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(bits(stream, static_cast<std::uint64_t>(i)) >> 40) * std::ldexp(1.0, -24);
    out[static_cast<std::size_t>(i)] = static_cast<float>(x * (to - from) + from);
  }
}

void CounterGenerator::randn(std::span<float> out) {
  const std::uint64_t stream = stream_++;
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t r = bits(stream, static_cast<std::uint64_t>(i));
    const double u1 = (static_cast<double>(r >> 40) + 0.5) * std::ldexp(1.0, -24);
    const double u2 = static_cast<double>(r & 0xFFFFFFu) * std::ldexp(1.0, -24);
    out[static_cast<std::size_t>(i)] =
        static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
  }
}

void CounterGenerator::randint(std::span<std::int64_t> out, std::int64_t low, std::int64_t high) {
  if (high <= low) throw std::invalid_argument("randint: empty range");
  const std::uint64_t stream = stream_++;
  const auto range = static_cast<std::uint64_t>(high - low);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = low + static_cast<std::int64_t>(bits(stream, i) % range);
}

}  // namespace attnbench
