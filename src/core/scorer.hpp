// The pluggable part: a scoring function e = score(s, H) and its plain reference.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/onednn_context.hpp"
#include "core/param_source.hpp"

namespace attnbench {

// Sizes a scorer sees: H is (batch, src_len, enc_dim), s is (batch, dec_dim).
struct ScorerShape {
  std::int64_t batch = 0, src_len = 0, enc_dim = 0, dec_dim = 0, attn_dim = 0;
};

// Maps the previous decoder state s (B, D) and the annotations H (B, L, E) to
// scores e (B, L). A scorer owns only its parameters and its cached keys.
class Scorer {
 public:
  virtual ~Scorer() = default;

  // Creates the oneDNN primitives for the shape; call once before prepare().
  virtual void build(OneDnnContext& ctx) = 0;
  // Computes the step-independent keys from H; H must stay alive while score() is used.
  virtual void prepare(const float* H) = 0;
  // Writes e (B, L) for the state s (B, D), using the keys of the last prepare().
  virtual void score(const float* s, float* e) = 0;
  // Scores that differ from score()'s by a constant per example and do not depend on s,
  // when the scorer has them (softmax is shift-invariant, so they give the same weights,
  // bit-identical at every step); nullptr otherwise. Valid after prepare().
  virtual const float* alignment_logits() const { return nullptr; }
  // The same scores in plain double loops from the same parameters, without oneDNN.
  virtual std::vector<double> reference_score(std::span<const double> s, std::span<const double> H) const = 0;
};

// One row of the scorer table (variants/variants.def lists them).
struct ScorerInfo {
  const char* name;
  const char* formula;
  const char* parameters;  // in PyTorch creation order
  const char* paper;
  // Draws the parameters from `source` in PyTorch's order.
  std::unique_ptr<Scorer> (*make)(ParamSource& source, const ScorerShape& shape);
};

}  // namespace attnbench
