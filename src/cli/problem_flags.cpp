#include "cli/problem_flags.hpp"

#include <stdexcept>

#include "variants/registry.hpp"

namespace attnbench {

void add_problem_flags(CLI::App& app, ProblemFlags& flags, bool decoder_flags) {
  Problem& p = flags.problem;
  app.add_option("--scorer", p.scorer, "Scoring function: " + scorer_names())->capture_default_str();
  app.add_option("--batch", p.batch, "Examples per batch (B)")->capture_default_str();
  app.add_option("--src-len", p.src_len, "Source length (L)")->capture_default_str();
  if (decoder_flags) app.add_option("--tgt-len", p.tgt_len, "Decode steps (T)")->capture_default_str();
  if (decoder_flags) app.add_option("--emb-dim", p.emb_dim, "Token embedding size")->capture_default_str();
  app.add_option("--enc-dim", p.enc_dim, "Annotation size E = 2 x encoder GRU hidden")->capture_default_str();
  app.add_option("--dec-dim", p.dec_dim, "Decoder state size D")->capture_default_str();
  app.add_option("--attn-dim", p.attn_dim, "Attention inner size A")->capture_default_str();
  if (decoder_flags) app.add_option("--vocab", p.vocab, "Vocabulary size (source and target)")->capture_default_str();
  app.add_option("--threads", p.threads, "OpenMP threads for the oneDNN kernels")->capture_default_str();
  app.add_option("--dtype", flags.dtype, "Data type: f32")->capture_default_str();
  app.add_option("--seed", p.seed, "Random seed")->capture_default_str();
  app.add_option("--init", flags.init, "Parameter init: fast, or torch (PyTorch's CPU streams, value for value)")
      ->capture_default_str();
  if (decoder_flags)
    app.add_option("--len-min", p.len_min,
                   "Shortest source length; lengths fall linearly from src-len (example 0) to it. 0: no padding")
        ->capture_default_str();
}

Problem to_problem(const ProblemFlags& flags) {
  Problem p = flags.problem;
  find_scorer(p.scorer);
  if (flags.dtype != "f32")
    throw std::invalid_argument("--dtype: unsupported data type '" + flags.dtype + "'; supported: f32");
  if (flags.init == "torch")
    p.init = InitKind::torch;
  else if (flags.init == "fast")
    p.init = InitKind::fast;
  else
    throw std::invalid_argument("--init: unknown init '" + flags.init + "'; known: fast, torch");
  validate(p);
  return p;
}

}  // namespace attnbench
