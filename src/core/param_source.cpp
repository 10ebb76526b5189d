#include "core/param_source.hpp"

#include <cmath>

namespace attnbench {

namespace {
std::variant<TorchGenerator, CounterGenerator> make_generator(InitKind kind, std::uint64_t seed) {
  if (kind == InitKind::torch) return TorchGenerator(seed);
  return CounterGenerator(seed);
}

std::vector<float> make_uniform(ParamSource& source, std::int64_t n, double bound) {
  std::vector<float> values(static_cast<std::size_t>(n));
  source.uniform(values, -bound, bound);
  return values;
}
}  // namespace

ParamSource::ParamSource(InitKind kind, std::uint64_t seed) : generator_(make_generator(kind, seed)) {}

void ParamSource::uniform(std::span<float> out, double from, double to) {
  std::visit([&](auto& g) { g.uniform(out, from, to); }, generator_);
}

void ParamSource::randn(std::span<float> out) {
  std::visit([&](auto& g) { g.randn(out); }, generator_);
}

void ParamSource::randint(std::span<std::int64_t> out, std::int64_t low, std::int64_t high) {
  std::visit([&](auto& g) { g.randint(out, low, high); }, generator_);
}

LinearParams make_linear(ParamSource& source, std::int64_t in, std::int64_t out, bool bias) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  LinearParams p{in, out, make_uniform(source, in * out, bound), {}};
  if (bias) p.bias = make_uniform(source, out, bound);
  return p;
}

GruParams make_gru(ParamSource& source, std::int64_t input, std::int64_t hidden) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  GruParams p{input, hidden, {}, {}, {}, {}};
  p.w_ih = make_uniform(source, 3 * hidden * input, bound);
  p.w_hh = make_uniform(source, 3 * hidden * hidden, bound);
  p.b_ih = make_uniform(source, 3 * hidden, bound);
  p.b_hh = make_uniform(source, 3 * hidden, bound);
  return p;
}

std::vector<float> make_randn(ParamSource& source, std::int64_t n) {
  std::vector<float> values(static_cast<std::size_t>(n));
  source.randn(values);
  return values;
}

std::vector<float> make_embedding(ParamSource& source, std::int64_t num, std::int64_t dim) {
  return make_randn(source, num * dim);
}

}  // namespace attnbench
