// Parameter creation in PyTorch's order and default distributions (spec/torch-init.md).
#pragma once

#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "core/problem.hpp"
#include "core/random.hpp"

namespace attnbench {

// The one random stream a harness draws from: PyTorch's (--init torch) or the fast one.
class ParamSource {
 public:
  ParamSource(InitKind kind, std::uint64_t seed);

  void uniform(std::span<float> out, double from, double to);
  void randn(std::span<float> out);
  void randint(std::span<std::int64_t> out, std::int64_t low, std::int64_t high);

 private:
  std::variant<TorchGenerator, CounterGenerator> generator_;
};

// nn.Linear(in, out): weight (out, in) row-major, bias (out) or empty.
struct LinearParams {
  std::int64_t in = 0, out = 0;
  std::vector<float> weight;
  std::vector<float> bias;
};

// Draws like nn.Linear(in, out, bias): weight, then bias, uniform in +-1/sqrt(in).
LinearParams make_linear(ParamSource& source, std::int64_t in, std::int64_t out, bool bias);

// One direction of nn.GRU / an nn.GRUCell, PyTorch layout: rows are gates r, z, n.
struct GruParams {
  std::int64_t input = 0, hidden = 0;
  std::vector<float> w_ih;  // (3 hidden, input)
  std::vector<float> w_hh;  // (3 hidden, hidden)
  std::vector<float> b_ih;  // (3 hidden)
  std::vector<float> b_hh;  // (3 hidden)
};

// Draws w_ih, w_hh, b_ih, b_hh uniform in +-1/sqrt(hidden), in that order.
GruParams make_gru(ParamSource& source, std::int64_t input, std::int64_t hidden);

// Draws like nn.Embedding(num, dim): a (num, dim) table of normal(0, 1).
std::vector<float> make_embedding(ParamSource& source, std::int64_t num, std::int64_t dim);

// Draws like torch.randn(shape) for a tensor of n elements.
std::vector<float> make_randn(ParamSource& source, std::int64_t n);

}  // namespace attnbench
