// Every parameter and input of one encoder-decoder run, drawn in PyTorch's order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/param_source.hpp"
#include "core/problem.hpp"
#include "core/scorer.hpp"

namespace attnbench {

using ScorerFactory = std::unique_ptr<Scorer> (*)(ParamSource& source, const ScorerShape& shape);

// The PyTorch twin (scripts/torch_twin.py) creates the same objects in the same order:
// src_emb, tgt_emb (nn.Embedding(vocab, emb_dim)), encoder (nn.GRU(emb_dim, enc_dim/2,
// bidirectional)), bridge (nn.Linear(enc_dim/2, dec_dim)), the scorer, cell
// (nn.GRUCell(emb_dim + enc_dim, dec_dim)), out (nn.Linear(dec_dim + enc_dim, vocab)),
// then src = randint(0, vocab, (B, L)) and tgt = randint(0, vocab, (B, T)).
struct Model {
  Problem problem;
  std::vector<float> src_emb, tgt_emb;  // (vocab, emb_dim)
  GruParams enc_fwd, enc_bwd;
  LinearParams bridge;
  std::unique_ptr<Scorer> scorer;
  GruParams cell;
  LinearParams out;
  std::vector<std::int64_t> src_tokens;  // (batch, src_len)
  std::vector<std::int64_t> tgt_tokens;  // (batch, tgt_len): decoder input at step t is column t
  std::vector<std::int64_t> lengths;     // valid source length per example

  ScorerShape scorer_shape() const;
};

// Draws the whole model for p (p.init and p.seed choose the stream).
Model make_model(const Problem& p, ScorerFactory make_scorer);
// The same from `source`, which goes on where the model's draws end (e.g. gold targets next).
Model make_model(ParamSource& source, const Problem& p, ScorerFactory make_scorer);

}  // namespace attnbench
