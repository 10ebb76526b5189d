#include "train/adam.hpp"

#include <cmath>
#include <stdexcept>

namespace attnbench {

Adam::Adam(const std::vector<NamedTensor>& params, AdamOptions options) : options_(options) {
  for (const NamedTensor& p : params) {
    m_.emplace_back(p.data.size(), 0.f);
    v_.emplace_back(p.data.size(), 0.f);
  }
}

void Adam::step(const std::vector<NamedTensor>& params, const std::vector<NamedTensor>& grads) {
  if (params.size() != m_.size() || grads.size() != m_.size()) throw std::logic_error("Adam: tensor count changed");
  ++steps_;
  const double k = static_cast<double>(steps_);
  const double correction1 = 1.0 - std::pow(options_.beta1, k);
  const double correction2_sqrt = std::sqrt(1.0 - std::pow(options_.beta2, k));
  const float beta1 = static_cast<float>(options_.beta1), beta2 = static_cast<float>(options_.beta2);
  const float keep1 = static_cast<float>(1.0 - options_.beta1), keep2 = static_cast<float>(1.0 - options_.beta2);
  const float step_size = static_cast<float>(options_.lr / correction1);
  const float root2 = static_cast<float>(correction2_sqrt), eps = static_cast<float>(options_.eps);
  for (std::size_t i = 0; i < m_.size(); ++i) {
    float* p = params[i].data.data();
    const float* g = grads[i].data.data();
    float* m = m_[i].data();
    float* v = v_[i].data();
    for (std::size_t j = 0; j < m_[i].size(); ++j) {
      m[j] = m[j] * beta1 + keep1 * g[j];
      v[j] = v[j] * beta2 + keep2 * g[j] * g[j];
      const float denom = std::sqrt(v[j]) / root2 + eps;
      p[j] -= step_size * (m[j] / denom);
    }
  }
}

}  // namespace attnbench
