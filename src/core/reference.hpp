// Plain double-precision loops for every piece of the harness; the checks hold the
// oneDNN path to these. Nothing here is tuned: clarity over speed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/model.hpp"
#include "core/param_source.hpp"
#include "core/trace.hpp"

namespace attnbench::ref {

std::vector<double> to_double(std::span<const float> v);

// y (rows, out) = x (rows, in) W^T + b, like nn.Linear.
std::vector<double> linear(std::span<const double> x, std::int64_t rows, const LinearParams& p);

// Elementwise tanh in place.
void tanh_inplace(std::vector<double>& x);

// Sets e[b, j] = -inf for j >= lengths[b]; returns softmax over each row (B, L);
// masked positions get exactly 0.
std::vector<double> masked_softmax(std::vector<double>& e, std::int64_t batch, std::int64_t src_len,
                                   std::span<const std::int64_t> lengths);

// c (B, E) = sum_j alpha[b, j] H[b, j, :].
std::vector<double> context(std::span<const double> alpha, std::span<const double> H, std::int64_t batch,
                            std::int64_t src_len, std::int64_t enc_dim);

// One GRU step with PyTorch's equations: x (B, in), h (B, hidden) -> h' (B, hidden).
std::vector<double> gru_cell(std::span<const double> x, std::span<const double> h, std::int64_t batch,
                             const GruParams& p);

// The whole model (encoder, bridge, every decode step) in double.
DecodeTrace decode(const Model& model);

// F.cross_entropy(logits (B*T, V), gold (B*T)) of decode(model) in double: the mean over
// the targets that are not `ignore` of -log softmax(logits)[target]; gold is (B, T) row-major.
double decode_loss(const Model& model, std::span<const std::int64_t> gold, std::int64_t ignore);

}  // namespace attnbench::ref
