#include "core/problem.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <stdexcept>

namespace attnbench {

std::vector<std::int64_t> source_lengths(const Problem& p) {
  const std::int64_t lo = p.effective_len_min();
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(p.batch), p.src_len);
  if (p.batch < 2) return lengths;
  for (std::int64_t b = 0; b < p.batch; ++b)
    lengths[static_cast<std::size_t>(b)] = p.src_len - (p.src_len - lo) * b / (p.batch - 1);
  return lengths;
}

std::uint64_t estimated_bytes(const Problem& p) {
  const double B = p.batch, L = p.src_len, E = p.enc_dim, D = p.dec_dim, A = p.attn_dim,
               V = p.vocab, M = p.emb_dim, h = p.enc_hidden();
  const double params = 2 * V * M                       // embeddings
                        + 2 * (3 * h * M + 3 * h * h + 6 * h)  // BiGRU
                        + h * D + D                      // bridge
                        + A * (D + E + 2) + E * D + D * L  // scorer (largest of the family)
                        + 3 * D * (M + E) + 3 * D * D + 6 * D  // GRU cell
                        + V * (D + E) + V;               // output layer
  const double activations = B * L * (M + 2 * E + 2 * A + 4)  // embedded source, H, keys, (B,L,A) scratch
                             + B * (M + 2 * E + 4 * D + 2 * V);
  // oneDNN may keep a reordered copy of every weight.
  return static_cast<std::uint64_t>(4.0 * (2 * params + activations));
}

std::uint64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

namespace {

void require_positive(const char* flag, std::int64_t value) {
  if (value <= 0) throw std::invalid_argument(fmt::format("{}: must be a positive whole number, got {}", flag, value));
}

std::string gib(std::uint64_t bytes) {
  return fmt::format("{:.3g} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string field_text(const std::string& value) { return value; }
template <typename T>
  requires std::is_integral_v<T>
std::string field_text(T value) {
  return std::to_string(value);
}
template <typename E>
  requires std::is_enum_v<E>
std::string field_text(E value) {
  return to_string(value);
}

}  // namespace

void validate_sizes(const Problem& p) {
  require_positive("--batch", p.batch);
  require_positive("--src-len", p.src_len);
  require_positive("--tgt-len", p.tgt_len);
  require_positive("--emb-dim", p.emb_dim);
  require_positive("--enc-dim", p.enc_dim);
  require_positive("--dec-dim", p.dec_dim);
  require_positive("--attn-dim", p.attn_dim);
  require_positive("--vocab", p.vocab);
  require_positive("--threads", p.threads);
  if (p.enc_dim % 2 != 0)
    throw std::invalid_argument(fmt::format(
        "--enc-dim: must be even (it is 2 x the bidirectional encoder's hidden size), got {}", p.enc_dim));
  if (p.len_min < 0 || p.len_min > p.src_len)
    throw std::invalid_argument(fmt::format(
        "--len-min: must be between 1 and --src-len ({}), or 0 for no padding, got {}", p.src_len, p.len_min));
}

void validate(const Problem& p) {
  validate_sizes(p);
  const std::uint64_t need = estimated_bytes(p);
  const std::uint64_t have = available_memory_bytes();
  if (have != 0 && need > have * 3 / 4)
    throw std::invalid_argument(fmt::format(
        "problem too large: {} needs about {} > 75% of available memory ({}); reduce --batch, --src-len, --vocab "
        "or the dims",
        repro_flags(p), gib(need), gib(have)));
}

std::vector<std::pair<std::string, std::string>> field_values(const Problem& p) {
  return {
#define ATTNBENCH_FIELD(name, flag, cpp_type, kind, default_value, decoder_only, description) \
  {#name, field_text(p.name)},
#include "core/problem_fields.def"
  };
}

std::string repro_flags(const Problem& p) {
  std::vector<std::string> flags;
#define ATTNBENCH_FIELD(name, flag, cpp_type, kind, default_value, decoder_only, description) \
  flags.push_back(fmt::format("{} {}", flag, field_text(p.name)));
#include "core/problem_fields.def"
  return fmt::format("{}", fmt::join(flags, " "));
}

}  // namespace attnbench
