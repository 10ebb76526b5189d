// One training step on one batch: forward, loss, backward, clip, Adam.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/model.hpp"
#include "core/onednn_context.hpp"
#include "train/adam.hpp"
#include "train/backprop.hpp"
#include "train/parameters.hpp"

namespace attnbench {

struct TrainOptions {
  double lr = 1e-3;  // Adam's learning rate
  double clip = 5;   // max global L2 norm of the gradients (clip_grad_norm_)
};

// Trains `model` on one batch with targets `gold` (B, T). Everything is allocated here,
// a step allocates nothing of its own. Example (what `attnbench grad` prints):
//   Trainer tr(ctx, model, gold, {}); for (k..K) tr.step(); double loss = tr.forward_backward();
//   for (const NamedTensor& g : tr.gradients()) ...
class Trainer {
 public:
  Trainer(OneDnnContext& ctx, Model& model, std::vector<std::int64_t> gold, TrainOptions options);

  // The loss, and gradients() = its unclipped dLoss/dparameter.
  double forward_backward();
  // clip_grad_norm_ then one Adam step on gradients(), and the ops read the new parameters.
  void update();
  // forward_backward() then update(); returns the loss before the update.
  double step();
  // Replaces the targets (B, T) the next forward_backward() uses; allocates nothing.
  void set_gold(std::span<const std::int64_t> gold);

  // The forward and backward, e.g. for a forward alone or its logits() and alphas().
  Backprop& backprop() { return backprop_; }

  // In PyTorch's named_parameters() order and names.
  const std::vector<NamedTensor>& gradients() const { return named_grads_; }

 private:
  std::vector<std::int64_t> gold_;
  TrainOptions options_;
  Backprop backprop_;
  Gradients grads_;
  std::vector<NamedTensor> named_params_, named_grads_;
  Adam adam_;
};

}  // namespace attnbench
