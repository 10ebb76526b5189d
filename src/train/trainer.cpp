#include "train/trainer.hpp"

#include <algorithm>
#include <stdexcept>

#include "train/clip.hpp"

namespace attnbench {

Trainer::Trainer(OneDnnContext& ctx, Model& model, std::vector<std::int64_t> gold, TrainOptions options)
    : gold_(std::move(gold)),
      options_(options),
      backprop_(ctx, model),
      grads_(make_gradients(model)),
      named_params_(named_parameters(model)),
      named_grads_(named_gradients(grads_, model)),
      adam_(named_params_, AdamOptions{options.lr}) {}

double Trainer::forward_backward() {
  const double loss = backprop_.forward(gold_);
  backprop_.backward(grads_);
  return loss;
}

void Trainer::update() {
  clip_grad_norm(named_grads_, options_.clip);
  adam_.step(named_params_, named_grads_);
  backprop_.reload();
}

void Trainer::set_gold(std::span<const std::int64_t> gold) {
  if (gold.size() != gold_.size()) throw std::invalid_argument("Trainer::set_gold: gold must be (B, T)");
  std::copy(gold.begin(), gold.end(), gold_.begin());
}

double Trainer::step() {
  const double loss = forward_backward();
  update();
  return loss;
}

}  // namespace attnbench
