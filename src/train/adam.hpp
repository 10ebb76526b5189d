// torch.optim.Adam (no weight decay, no amsgrad), step for step.
#pragma once

#include <cstdint>
#include <vector>

#include "train/parameters.hpp"

namespace attnbench {

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

// Keeps the first and second moments of every parameter. step() computes, as PyTorch 1.13's
// single-tensor Adam does (f32 tensors, double scalars): m = b1 m + (1 - b1) g,
// v = b2 v + (1 - b2) g^2, p -= lr / (1 - b1^k) * m / (sqrt(v) / sqrt(1 - b2^k) + eps).
// Example: Adam adam(named_parameters(model), {}); adam.step(named_parameters(model), named_gradients(g, model));
class Adam {
 public:
  Adam(const std::vector<NamedTensor>& params, AdamOptions options);

  // params and grads: the same tensors, in the same order, as given to the constructor. Allocates nothing.
  void step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>& grads);
  std::int64_t steps() const { return steps_; }

 private:
  AdamOptions options_;
  std::int64_t steps_ = 0;
  std::vector<std::vector<float>> m_, v_;
};

}  // namespace attnbench
