// Every parameter of a Model by PyTorch's name, and a gradient for each.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/model.hpp"

namespace attnbench {

// One tensor by name, with its shape in PyTorch's layout (row-major) and its values.
struct NamedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::span<float> data;
};

// dLoss/dparameter for every parameter of a Model, in the Model's layouts.
struct Gradients {
  std::vector<float> src_emb, tgt_emb;
  GruParams enc_fwd, enc_bwd;
  LinearParams bridge;
  std::vector<std::vector<float>> scorer;  // one per Scorer::parameters() entry
  GruParams cell;
  LinearParams out;

  // The scorer's gradients as the spans Scorer::backward_*() take.
  std::vector<std::span<float>> scorer_spans();
};

// Zeros shaped like model's parameters.
Gradients make_gradients(Model& model);

// The model's parameters in the order of PyTorch's named_parameters() of the twin
// (src_emb, tgt_emb, encoder, bridge, scorer, cell, out), e.g. "encoder.weight_hh_l0_reverse".
std::vector<NamedTensor> named_parameters(Model& model);

// grads in the same order, with the same names and shapes.
std::vector<NamedTensor> named_gradients(Gradients& grads, Model& model);

}  // namespace attnbench
