#include "core/harness.hpp"

#include <algorithm>

namespace attnbench {

namespace {
std::vector<float> zeros(std::int64_t n) { return std::vector<float>(static_cast<std::size_t>(n), 0.f); }

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Copies rows of `a` (n, a_cols) and `b` (n, b_cols) side by side into out (n, a_cols + b_cols).
void concat_rows(const float* a, std::int64_t a_cols, const float* b, std::int64_t b_cols, std::int64_t n,
                 float* out) {
  for (std::int64_t r = 0; r < n; ++r) {
    std::copy_n(a + r * a_cols, a_cols, out + r * (a_cols + b_cols));
    std::copy_n(b + r * b_cols, b_cols, out + r * (a_cols + b_cols) + a_cols);
  }
}
}  // namespace

Harness::Harness(OneDnnContext& ctx, Model& model)
    : model_(model),
      p_(model.problem),
      encoder_(ctx, p_.src_len, p_.batch, {&model.enc_fwd, &model.enc_bwd}),
      cell_(ctx, 1, p_.batch, {&model.cell}),
      bridge_(ctx, p_.batch, model.bridge, dnnl::algorithm::eltwise_tanh),
      out_(ctx, p_.batch, model.out),
      attend_(p_.impl == Impl::onednn ? Attend(ctx, p_.batch, p_.src_len, p_.enc_dim, model.lengths) : Attend()),
      fused_(p_.impl == Impl::fused ? FusedAttend(ctx.threads(), model.scorer_shape(), model.lengths, p_.dtype,
                                                          model.scorer->fused_score_work(model.scorer_shape())) : FusedAttend()),
      embedded_(zeros(p_.batch * p_.src_len * p_.emb_dim)),
      annotations_(zeros(p_.batch * p_.src_len * p_.enc_dim)),
      final_iter_(zeros(2 * p_.batch * p_.enc_hidden())),
      state_(zeros(p_.batch * p_.dec_dim)),
      next_state_(zeros(p_.batch * p_.dec_dim)),
      scores_(zeros(p_.batch * p_.src_len)),
      weights_(zeros(p_.batch * p_.src_len)),
      context_(zeros(p_.batch * p_.enc_dim)),
      cell_input_(zeros(p_.batch * (p_.emb_dim + p_.enc_dim))),
      out_input_(zeros(p_.batch * (p_.dec_dim + p_.enc_dim))),
      logits_(zeros(p_.batch * p_.vocab)) {
  model.scorer->build(ctx, p_.impl);
}

void Harness::encode() {
  const std::int64_t rows = p_.batch * p_.src_len, m = p_.emb_dim;
  for (std::int64_t r = 0; r < rows; ++r)
    std::copy_n(model_.src_emb.data() + model_.src_tokens[static_cast<std::size_t>(r)] * m, m,
                embedded_.data() + r * m);
  encoder_.run(embedded_.data(), nullptr, annotations_.data(), final_iter_.data());
  // final_iter_ is (directions, B, h): the backward direction's last state is h_1(backward).
  bridge_.run(final_iter_.data() + p_.batch * p_.enc_hidden(), state_.data());
}

void Harness::prepare_keys() {
  model_.scorer->prepare(annotations_.data());
  if (p_.impl == Impl::onednn) attend_.bind_annotations(annotations_.data());
  if (p_.impl == Impl::fused) fused_.prepare(*model_.scorer, annotations_.data());
}

void Harness::score() {
  if (p_.impl == Impl::fused) {
    fused_.score(*model_.scorer, state_.data(), scores_.data());
    return;
  }
  model_.scorer->score(state_.data(), scores_.data());
}

void Harness::attend() {
  const float* static_logits = model_.scorer->alignment_logits();
  if (p_.impl == Impl::fused) {
    fused_.attend(static_logits ? static_logits : scores_.data(), annotations_.data(), weights_.data(),
                  context_.data());
    return;
  }
  attend_.mask(scores_.data());
  attend_.softmax(static_logits ? static_logits : scores_.data(), weights_.data());
  attend_.context(weights_.data(), context_.data());
}

void Harness::score_and_attend() {
  if (p_.impl == Impl::fused) {
    fused_.step(*model_.scorer, state_.data(), annotations_.data(), scores_.data(), weights_.data(), context_.data());
    return;
  }
  score();
  attend();
}

void Harness::cell(std::int64_t t) {
  const std::int64_t m = p_.emb_dim, e = p_.enc_dim;
  for (std::int64_t b = 0; b < p_.batch; ++b) {
    const std::int64_t token = model_.tgt_tokens[static_cast<std::size_t>(b * p_.tgt_len + t)];
    std::copy_n(model_.tgt_emb.data() + token * m, m, cell_input_.data() + b * (m + e));
    std::copy_n(context_.data() + b * e, e, cell_input_.data() + b * (m + e) + m);
  }
  cell_.run(cell_input_.data(), state_.data(), next_state_.data(), nullptr);
  state_.swap(next_state_);
}

void Harness::output() {
  concat_rows(state_.data(), p_.dec_dim, context_.data(), p_.enc_dim, p_.batch, out_input_.data());
  out_.run(out_input_.data(), logits_.data());
}

void Harness::decode_step(std::int64_t t) {
  score_and_attend();
  cell(t);
  output();
}

void Harness::decode() {
  prepare_keys();
  for (std::int64_t t = 0; t < p_.tgt_len; ++t) decode_step(t);
}

DecodeTrace Harness::run_traced() {
  DecodeTrace trace;
  encode();
  trace.annotations = to_double(annotations_);
  trace.initial_state = to_double(state_);
  prepare_keys();
  for (std::int64_t t = 0; t < p_.tgt_len; ++t) {
    decode_step(t);
    trace.steps.push_back(
        {to_double(scores_), to_double(weights_), to_double(context_), to_double(state_), to_double(logits_)});
  }
  return trace;
}

}  // namespace attnbench
