#include "train/clip.hpp"

#include <algorithm>
#include <cmath>

namespace attnbench {

double clip_grad_norm(const std::vector<NamedTensor>& grads, double max_norm) {
  double squares = 0.0;
  for (const NamedTensor& g : grads)
    for (float x : g.data) squares += static_cast<double>(x) * x;
  const double total = std::sqrt(squares);
  const float factor = static_cast<float>(std::min(1.0, max_norm / (total + 1e-6)));
  for (const NamedTensor& g : grads)
    for (float& x : g.data) x *= factor;
  return total;
}

}  // namespace attnbench
