#include "core/model.hpp"

namespace attnbench {

ScorerShape Model::scorer_shape() const {
  return {problem.batch, problem.src_len, problem.enc_dim, problem.dec_dim, problem.attn_dim};
}

Model make_model(const Problem& p, ScorerFactory make_scorer) {
  ParamSource source(p.init, p.seed);
  return make_model(source, p, make_scorer);
}

Model make_model(ParamSource& source, const Problem& p, ScorerFactory make_scorer) {
  Model m;
  m.problem = p;
  m.src_emb = make_embedding(source, p.vocab, p.emb_dim);
  m.tgt_emb = make_embedding(source, p.vocab, p.emb_dim);
  m.enc_fwd = make_gru(source, p.emb_dim, p.enc_hidden());
  m.enc_bwd = make_gru(source, p.emb_dim, p.enc_hidden());
  m.bridge = make_linear(source, p.enc_hidden(), p.dec_dim, true);
  m.scorer = make_scorer(source, m.scorer_shape());
  m.cell = make_gru(source, p.emb_dim + p.enc_dim, p.dec_dim);
  m.out = make_linear(source, p.dec_dim + p.enc_dim, p.vocab, true);
  m.src_tokens.resize(static_cast<std::size_t>(p.batch * p.src_len));
  m.tgt_tokens.resize(static_cast<std::size_t>(p.batch * p.tgt_len));
  source.randint(m.src_tokens, 0, p.vocab);
  source.randint(m.tgt_tokens, 0, p.vocab);
  m.lengths = source_lengths(p);
  return m;
}

}  // namespace attnbench
