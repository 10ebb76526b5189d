// Shared by the suites that run both implementations (Impl::onednn and Impl::fused).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "core/scorer.hpp"
#include "test_support.hpp"

namespace attnbench::test {

inline std::vector<Impl> all_impls() { return {Impl::onednn, Impl::fused}; }

// A point with several steps and padding (lengths 17, 11, 5), where the decoder state
// clearly moves; small enough that the fused step runs serially and q = W s by hand.
inline Problem multi_step_point(const std::string& scorer, InitKind init, Impl impl = Impl::onednn) {
  Problem p;
  p.impl = impl;
  p.scorer = scorer;
  p.batch = 3;
  p.src_len = 17;
  p.tgt_len = 6;
  p.enc_dim = 34;
  p.dec_dim = 33;
  p.attn_dim = 17;
  p.emb_dim = 9;
  p.vocab = 50;
  p.len_min = 5;
  p.init = init;
  p.seed = 3;
  return p;
}

// The same cases computed by `impl`.
inline std::vector<Case> with_impl(std::vector<Case> cases, Impl impl) {
  for (Case& c : cases) c.problem.impl = impl;
  return cases;
}

// Writes e (B, L) for the state s the way `impl` scores (the scorer built for it):
// score(), or fused_query() and then every row at full length.
inline void compute_scores(Scorer& scorer, Impl impl, const ScorerShape& shape, const float* s, float* e) {
  if (impl == Impl::onednn) {
    scorer.score(s, e);
    return;
  }
  scorer.fused_query(s, 0, 1);
  for (std::int64_t b = 0; b < shape.batch; ++b) scorer.fused_score_row(b, shape.src_len, e + b * shape.src_len, {});
}

}  // namespace attnbench::test

namespace attnbench {
// gtest prints an Impl parameter by name instead of its bytes.
inline void PrintTo(Impl i, std::ostream* os) { *os << to_string(i); }
}  // namespace attnbench
