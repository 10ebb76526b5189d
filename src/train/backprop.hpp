// The training forward and the backward of the whole harness on oneDNN.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/linear_backward.hpp"
#include "core/matmul_op.hpp"
#include "core/model.hpp"
#include "core/onednn_context.hpp"
#include "train/attend_training.hpp"
#include "train/cross_entropy.hpp"
#include "train/gru_training.hpp"
#include "train/parameters.hpp"

namespace attnbench {

// Runs the model as Harness::decode() does (teacher forcing on model.tgt_tokens, the
// source masked by model.lengths, all three read again at every forward()) keeping what the backward needs, then the loss
// F.cross_entropy(logits (B*T, V), gold (B*T)) and its gradients for every parameter.
// Always computes with oneDNN primitives (Impl::onednn) in f32. All primitives and buffers
// are created here. Example:
//   Backprop bp(ctx, model); Gradients g = make_gradients(model);
//   double loss = bp.forward(gold); bp.backward(g);
class Backprop {
 public:
  Backprop(OneDnnContext& ctx, Model& model);

  // gold (B, T) row-major, kIgnoreTarget where a target is padding; returns the mean loss.
  double forward(std::span<const std::int64_t> gold);
  // Overwrites grads with dLoss/dparameter of the last forward().
  void backward(Gradients& grads);
  // Makes every op read the model's parameters again (after an optimizer step).
  void reload();

  // (T, B, V) logits of the last forward, step by step.
  const std::vector<float>& logits() const { return logits_; }
  // (T, B, L) attention weights of the last forward, step by step (padded positions 0).
  const std::vector<float>& alphas() const { return alphas_; }

 private:
  Model& model_;
  std::int64_t B_, L_, T_, M_, E_, D_, V_, h_;
  GruTraining encoder_, cell_;
  LinearOp bridge_, out_;
  AttendTraining attend_;
  CrossEntropy loss_;
  LinearBackward bridge_back_, out_back_;
  std::vector<std::int64_t> targets_;  // (T, B)
  std::vector<float> embedded_, annotations_, final_iter_, states_, scores_, alphas_, context_, cell_in_, out_in_,
      logits_;
  std::vector<float> dlogits_, dout_in_, dstate_, dstate_prev_, dstate_scorer_, dcell_in_, dcontexts_, dscores_,
      dbridge_, dfinal_iter_, dannotations_, dembedded_;
  std::vector<std::span<float>> scorer_grads_;
};

}  // namespace attnbench
