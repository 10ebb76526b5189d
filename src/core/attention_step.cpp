#include "core/attention_step.hpp"

#include "core/attend.hpp"
#include "core/fused_attend.hpp"

namespace attnbench {

AttentionStep run_attention_step(OneDnnContext& ctx, Scorer& scorer, const ScorerShape& shape,
                                 const std::vector<float>& H, const std::vector<float>& s,
                                 const std::vector<std::int64_t>& lengths, Impl impl) {
  scorer.build(ctx, impl);
  AttentionStep out;
  out.scores.resize(static_cast<std::size_t>(shape.batch * shape.src_len));
  out.weights.resize(out.scores.size());
  out.context.resize(static_cast<std::size_t>(shape.batch * shape.enc_dim));
  scorer.prepare(H.data());
  if (impl == Impl::fused) {
    FusedAttend attend(ctx.threads(), shape, lengths, ctx.dtype(), scorer.fused_score_work(shape));
    attend.prepare(scorer, H.data());
    attend.step(scorer, s.data(), H.data(), out.scores.data(), out.weights.data(), out.context.data());
    return out;
  }
  Attend attend(ctx, shape.batch, shape.src_len, shape.enc_dim, lengths);
  scorer.score(s.data(), out.scores.data());
  attend.mask(out.scores.data());
  const float* logits = scorer.alignment_logits();
  attend.softmax(logits ? logits : out.scores.data(), out.weights.data());
  attend.bind_annotations(H.data());
  attend.context(out.weights.data(), out.context.data());
  return out;
}

}  // namespace attnbench
