#include "core/fused_attend.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"

namespace attnbench {

double fused_step_work(const ScorerShape& shape, double score_work) {
  return score_work + static_cast<double>(shape.batch * shape.src_len) * static_cast<double>(shape.enc_dim);
}

int fused_step_threads(int threads, const ScorerShape& shape, double score_work) {
  return shape.batch > 1 && fused_step_work(shape, score_work) >= kParallelStepWork ? threads : 1;
}

namespace {
// Bytes of B L `width` elements as stored in `dtype`.
double position_rows_bytes(const ScorerShape& shape, std::int64_t width, DType dtype) {
  const double bytes_per_element = dtype == DType::bf16 ? 2.0 : 4.0;
  return bytes_per_element * static_cast<double>(shape.batch * shape.src_len * width);
}
double annotation_bytes(const ScorerShape& shape, DType dtype) { return position_rows_bytes(shape, shape.enc_dim, dtype); }
}  // namespace

bool streams_annotations(const ScorerShape& shape, DType dtype) {
  return fused::streams_from_dram(annotation_bytes(shape, dtype));
}

bool streams_keys(const ScorerShape& shape, DType dtype) {
  return fused::streams_from_dram(position_rows_bytes(shape, shape.attn_dim, dtype));
}

bool alternates_example_order(const ScorerShape& shape, DType dtype) {
  return !streams_annotations(shape, dtype) && !streams_keys(shape, dtype);
}

bool prefetches_context_rows(const ScorerShape& shape, DType dtype) {
  return annotation_bytes(shape, dtype) >= kContextPrefetchBytes;
}

FusedAttend::FusedAttend(int threads, const ScorerShape& shape, std::vector<std::int64_t> lengths, DType dtype,
                         double score_work)
    : threads_(threads),
      batch_(shape.batch),
      src_len_(shape.src_len),
      enc_dim_(shape.enc_dim),
      lengths_(std::move(lengths)),
      length_prefix_(length_prefix_of(lengths_)),
      parallel_(fused_step_threads(threads, shape, score_work) > 1),
      parallel_static_(threads > 1 && shape.batch > 1 &&
                       score_work + static_cast<double>(shape.batch * (shape.src_len + shape.enc_dim)) >=
                           kParallelStepWork),
      static_alpha_(static_cast<std::size_t>(shape.batch * shape.src_len)),
      static_context_(static_cast<std::size_t>(shape.batch * shape.enc_dim)),
      bf16_(dtype == DType::bf16),
      streams_annotations_(streams_annotations(shape, dtype)),
      prefetch_context_rows_(prefetches_context_rows(shape, dtype)),
      alternate_order_(alternates_example_order(shape, dtype)) {
  if (static_cast<std::int64_t>(lengths_.size()) != batch_)
    throw std::invalid_argument("FusedAttend: " + std::to_string(lengths_.size()) + " lengths for batch " +
                                std::to_string(batch_));
  even_parts_ = true;
  for (int part = 1; part < threads_; ++part)
    even_parts_ = even_parts_ && first_example_of_part(length_prefix_, part, threads_) == even_part(batch_, part, threads_).first;
}

std::vector<std::int64_t> length_prefix_of(std::span<const std::int64_t> lengths) {
  std::vector<std::int64_t> prefix(lengths.size() + 1, 0);
  std::partial_sum(lengths.begin(), lengths.end(), prefix.begin() + 1);
  return prefix;
}

std::int64_t first_example_of_part(std::span<const std::int64_t> length_prefix, int part, int parts) {
  const auto examples = static_cast<std::int64_t>(length_prefix.size()) - 1;
  if (part <= 0) return 0;
  if (part >= parts) return examples;
  // Scaled by parts: the ideal edge is total * part / parts, a prefix p sits at p * parts.
  const std::int64_t edge = length_prefix.back() * part;
  // The prefix sums never fall (lengths are >= 0): the first one at or past the edge.
  const auto after = std::lower_bound(length_prefix.begin(), length_prefix.end() - 1, edge,
                                      [&](std::int64_t prefix, std::int64_t at) { return prefix * parts < at; });
  std::int64_t b = after - length_prefix.begin();
  if (b > 0 && edge - length_prefix[static_cast<std::size_t>(b - 1)] * parts < *after * parts - edge) --b;
  return b;
}

void FusedAttend::prepare(const Scorer& scorer, const float* H) {
  if (bf16_) {
    annotations_bf16_ = scorer.fused_annotations_bf16();
    if (!annotations_bf16_) {
      own_annotations_bf16_.resize(static_cast<std::size_t>(batch_ * src_len_ * enc_dim_));  // once: same size later
      fused::to_bf16(H, batch_ * src_len_ * enc_dim_, own_annotations_bf16_.data());
      annotations_bf16_ = own_annotations_bf16_.data();
    }
  }
  const float* static_logits = scorer.alignment_logits();
  static_ready_ = static_logits != nullptr;
  if (static_ready_) attend(static_logits, H, static_alpha_.data(), static_context_.data());
}

bool FusedAttend::waits_for_whole_query(const Scorer& scorer, int parts) const {
  return !(parts == threads_ && even_parts_ && scorer.fused_query_covers_part(parts));
}

template <class Query, class PerExample>
void FusedAttend::for_each_example(bool parallel, Query query, PerExample per_example) {
  constexpr bool kHasQuery = !std::is_same_v<Query, NoQuery>;
  if (parallel) {
#pragma omp parallel num_threads(threads_)
    {
      const int part = omp_get_thread_num(), parts = omp_get_num_threads();
      if constexpr (kHasQuery) {
        query(part, parts);
        if (waits_for_whole_query(query.scorer, parts)) {  // the same on every thread, as a barrier needs
#pragma omp barrier
        }
      }
      in_order(first_example_of_part(length_prefix_, part, parts), first_example_of_part(length_prefix_, part + 1, parts),
               per_example);
    }
  } else {
    if constexpr (kHasQuery) query(0, 1);
    in_order(0, batch_, per_example);
  }
  backwards_ = alternate_order_ && !backwards_;
}

template <class PerExample>
void FusedAttend::in_order(std::int64_t first, std::int64_t end, PerExample& per_example) const {
  if (backwards_)
    for (std::int64_t b = end - 1; b >= first; --b) per_example(b);
  else
    for (std::int64_t b = first; b < end; ++b) per_example(b);
}

void FusedAttend::score_example(const Scorer& scorer, std::int64_t b, float* e, fused::PrefetchAlong next_pass) const {
  const std::int64_t len = lengths_[static_cast<std::size_t>(b)];
  float* e_b = e + b * src_len_;
  scorer.fused_score_row(b, len, e_b, next_pass);
  std::fill(e_b + len, e_b + src_len_, -std::numeric_limits<float>::infinity());
}

fused::PrefetchAlong FusedAttend::context_rows(std::int64_t b, const float* H) const {
  const std::int64_t offset = b * src_len_ * enc_dim_, elements = lengths_[static_cast<std::size_t>(b)] * enc_dim_;
  if (annotations_bf16_) return {annotations_bf16_ + offset, elements * 2};
  return {H + offset, elements * 4};
}

void FusedAttend::attend_example(std::int64_t b, const float* logits, const float* H, float* alpha,
                                 float* c) const {
  const std::int64_t len = lengths_[static_cast<std::size_t>(b)];
  float* alpha_b = alpha + b * src_len_;
  fused::masked_softmax_row(logits + b * src_len_, len, src_len_, alpha_b);
  float* c_b = c + b * enc_dim_;
  const std::int64_t first = b * src_len_ * enc_dim_;
  if (!streams_annotations_) {
    if (annotations_bf16_)
      fused::weighted_sum_rows(alpha_b, annotations_bf16_ + first, len, enc_dim_, c_b);
    else
      fused::weighted_sum_rows(alpha_b, H + first, len, enc_dim_, c_b);
  } else if (annotations_bf16_) {
    fused::weighted_sum_rows_streamed(alpha_b, annotations_bf16_ + first, len, enc_dim_, c_b, (batch_ - b) * src_len_);
  } else {
    fused::weighted_sum_rows_streamed(alpha_b, H + first, len, enc_dim_, c_b);
  }
}

void FusedAttend::score(Scorer& scorer, const float* s, float* e) {
  for_each_example(parallel_, ScorerQuery{scorer, s}, [&](std::int64_t b) { score_example(scorer, b, e, {}); });
}

void FusedAttend::attend(const float* logits, const float* H, float* alpha, float* c) {
  for_each_example(parallel_, NoQuery{}, [&](std::int64_t b) { attend_example(b, logits, H, alpha, c); });
}

void FusedAttend::step(Scorer& scorer, const float* s, const float* H, float* e, float* alpha, float* c) {
  const float* static_logits = scorer.alignment_logits();
  const float* logits = static_logits ? static_logits : e;
  if (static_logits && static_ready_) {
    for_each_example(parallel_static_, ScorerQuery{scorer, s}, [&](std::int64_t b) {
      score_example(scorer, b, e, {});
      std::copy_n(static_alpha_.data() + b * src_len_, src_len_, alpha + b * src_len_);
      std::copy_n(static_context_.data() + b * enc_dim_, enc_dim_, c + b * enc_dim_);
    });
    return;
  }
  for_each_example(parallel_, ScorerQuery{scorer, s}, [&](std::int64_t b) {
    score_example(scorer, b, e, prefetch_context_rows_ ? context_rows(b, H) : fused::PrefetchAlong{});
    attend_example(b, logits, H, alpha, c);
  });
}

}  // namespace attnbench
