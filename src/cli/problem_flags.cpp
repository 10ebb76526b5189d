#include "cli/problem_flags.hpp"

#include <sstream>
#include <stdexcept>
#include <vector>

#include "driver/grid.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

struct FlagDoc {
  const char* field;
  const char* flag;
  std::string help;
  bool decoder_only;
};

// The help text of every Problem flag, in Problem's order.
const std::vector<FlagDoc>& flag_docs() {
  static const std::vector<FlagDoc> docs = {
      {"scorer", "--scorer", "Scoring function: " + scorer_names(), false},
      {"batch", "--batch", "Examples per batch (B)", false},
      {"src_len", "--src-len", "Source length (L)", false},
      {"tgt_len", "--tgt-len", "Decode steps (T)", true},
      {"emb_dim", "--emb-dim", "Token embedding size", true},
      {"enc_dim", "--enc-dim", "Annotation size E = 2 x encoder GRU hidden (even)", false},
      {"dec_dim", "--dec-dim", "Decoder state size D", false},
      {"attn_dim", "--attn-dim", "Attention inner size A", false},
      {"vocab", "--vocab", "Vocabulary size (source and target)", true},
      {"threads", "--threads", "OpenMP threads for the oneDNN kernels", false},
      {"impl", "--impl", "Implementation: onednn (primitives only) or fused (OpenMP + SIMD, one pass over L)", false},
      {"dtype", "--dtype",
       "Matmul input type: f32, or bf16 (f32 accumulation; native on AVX512-BF16 or AMX, emulated on other AVX-512)",
       false},
      {"seed", "--seed", "Random seed", false},
      {"init", "--init", "Parameter init: fast, or torch (PyTorch's CPU streams, value for value)", false},
      {"len_min", "--len-min",
       "Shortest source length; lengths fall linearly from src-len (example 0) to it. 0: no padding", true},
  };
  return docs;
}

const FlagDoc& doc(std::string_view field) {
  for (const FlagDoc& d : flag_docs())
    if (d.field == field) return d;
  throw std::logic_error("no flag for field " + std::string(field));
}

template <typename T>
void add(CLI::App& app, std::string_view field, T& value, bool decoder_flags) {
  const FlagDoc& d = doc(field);
  if (d.decoder_only && !decoder_flags) return;
  app.add_option(d.flag, value, d.help)->capture_default_str();
}

}  // namespace

void add_problem_flags(CLI::App& app, ProblemFlags& flags, bool decoder_flags) {
  Problem& p = flags.problem;
  add(app, "scorer", p.scorer, decoder_flags);
  add(app, "batch", p.batch, decoder_flags);
  add(app, "src_len", p.src_len, decoder_flags);
  add(app, "tgt_len", p.tgt_len, decoder_flags);
  add(app, "emb_dim", p.emb_dim, decoder_flags);
  add(app, "enc_dim", p.enc_dim, decoder_flags);
  add(app, "dec_dim", p.dec_dim, decoder_flags);
  add(app, "attn_dim", p.attn_dim, decoder_flags);
  add(app, "vocab", p.vocab, decoder_flags);
  add(app, "threads", p.threads, decoder_flags);
  add(app, "impl", flags.impl, decoder_flags);
  add(app, "dtype", flags.dtype, decoder_flags);
  add(app, "seed", p.seed, decoder_flags);
  add(app, "init", flags.init, decoder_flags);
  add(app, "len_min", p.len_min, decoder_flags);
}

void add_grid_flags(CLI::App& app, std::map<std::string, std::string>& specs) {
  for (const auto& [field, value] : field_values(Problem{})) {
    const FlagDoc& d = doc(field);
    app.add_option_function<std::string>(
           d.flag, [&specs, field = field](const std::string& spec) { specs[field] = spec; }, d.help)
        ->option_text("SPEC [" + (field == "scorer" ? std::string("all") : value) + "]");
  }
}

Problem to_problem(const ProblemFlags& flags) {
  Problem p = flags.problem;
  find_scorer(p.scorer);
  if (flags.impl == "fused")
    p.impl = Impl::fused;
  else if (flags.impl != "onednn")
    throw std::invalid_argument("--impl: unknown impl '" + flags.impl + "'; known: onednn, fused");
  if (flags.dtype == "bf16")
    p.dtype = DType::bf16;
  else if (flags.dtype != "f32")
    throw std::invalid_argument("--dtype: unsupported data type '" + flags.dtype + "'; supported: f32, bf16");
  if (flags.init == "torch")
    p.init = InitKind::torch;
  else if (flags.init == "fast")
    p.init = InitKind::fast;
  else
    throw std::invalid_argument("--init: unknown init '" + flags.init + "'; known: fast, torch");
  validate(p);
  return p;
}

std::vector<std::int64_t> parse_lengths(const std::string& text, const Problem& p) {
  if (text.empty()) return source_lengths(p);
  std::vector<std::int64_t> lengths;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || used == 0 || value < 1 || value > p.src_len)
      throw std::invalid_argument("--lengths: bad length '" + item + "'; each must be a whole number in 1.." +
                                  std::to_string(p.src_len) + " (--src-len)");
    lengths.push_back(value);
  }
  if (static_cast<std::int64_t>(lengths.size()) != p.batch)
    throw std::invalid_argument("--lengths: got " + std::to_string(lengths.size()) + " lengths for --batch " +
                                std::to_string(p.batch) + "; give one per example");
  return lengths;
}

}  // namespace attnbench
