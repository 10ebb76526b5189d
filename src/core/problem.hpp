// One grid point: every size the harness needs, plus how to initialise and run it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnbench {

enum class InitKind { fast, torch };
// How a step is computed: oneDNN primitives only, or the fused OpenMP + SIMD kernels
// (scores, masked softmax and context in one pass over the source, no (B, L, A) tensor).
enum class Impl { onednn, fused };
// Input type of the oneDNN matmuls (bf16 accumulates in f32 and writes f32).
enum class DType { f32, bf16 };

// Sizes and settings of one encoder-decoder run. enc_dim is 2 x the encoder's
// GRU hidden size (forward and backward states are concatenated).
struct Problem {
  std::string scorer = "additive";
  std::int64_t batch = 2;
  std::int64_t src_len = 10;
  std::int64_t tgt_len = 5;
  std::int64_t emb_dim = 16;
  std::int64_t enc_dim = 16;
  std::int64_t dec_dim = 20;
  std::int64_t attn_dim = 32;
  std::int64_t vocab = 100;
  int threads = 1;
  Impl impl = Impl::onednn;
  DType dtype = DType::f32;
  std::uint64_t seed = 0;
  InitKind init = InitKind::fast;
  std::int64_t len_min = 0;  // shortest source length; 0 means src_len (no padding)

  std::int64_t enc_hidden() const { return enc_dim / 2; }
  std::int64_t effective_len_min() const { return len_min == 0 ? src_len : len_min; }
};

// Valid source length of each example: linearly spaced from src_len (example 0)
// down to len_min (the last example). Example: batch 3, src_len 10, len_min 4 -> {10, 7, 4}.
std::vector<std::int64_t> source_lengths(const Problem& p);

// Most threads a point may ask for.
inline constexpr int kMaxThreads = 4096;

// Bytes the harness allocates for p (parameters and activations), an upper estimate;
// kSizeOverflow (core/checked_size.hpp) when the count does not fit in 64 bits.
std::uint64_t estimated_bytes(const Problem& p);

// Bytes of memory available to this process now (MemAvailable), 0 if unknown.
std::uint64_t available_memory_bytes();

// Throws std::invalid_argument with one line naming the flag and the bad value
// when a field is out of range.
void validate_sizes(const Problem& p);

// validate_sizes(), and refuses a point whose byte count overflows or that would not fit in
// 75% of available memory.
void validate(const Problem& p);

std::string to_string(InitKind k);
std::string to_string(DType d);
std::string to_string(Impl i);

// A shell command that runs exactly this point again, e.g.
// "attnbench probe --scorer dot --batch 2 ...".
std::string repro_flags(const Problem& p);

}  // namespace attnbench
