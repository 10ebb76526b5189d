// torch.nn.utils.clip_grad_norm_ over every gradient at once.
#pragma once

#include <vector>

#include "train/parameters.hpp"

namespace attnbench {

// Scales every gradient by min(1, max_norm / (total + 1e-6)), total the L2 norm of all of
// them together, as PyTorch 1.13 does (it multiplies even when the factor is 1); returns total.
double clip_grad_norm(const std::vector<NamedTensor>& grads, double max_norm);

}  // namespace attnbench
