#include "train/backprop.hpp"

#include <algorithm>
#include <stdexcept>

namespace attnbench {

namespace {
std::vector<float> zeros(std::int64_t n) { return std::vector<float>(static_cast<std::size_t>(n), 0.f); }

void fill_zero(std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.f); }

void fill_zero(LinearParams& p) {
  fill_zero(p.weight);
  fill_zero(p.bias);
}

// Copies rows of a (n, a_cols) and b (n, b_cols) side by side into out (n, a_cols + b_cols).
void concat_rows(const float* a, std::int64_t a_cols, const float* b, std::int64_t b_cols, std::int64_t n,
                 float* out) {
  for (std::int64_t r = 0; r < n; ++r) {
    std::copy_n(a + r * a_cols, a_cols, out + r * (a_cols + b_cols));
    std::copy_n(b + r * b_cols, b_cols, out + r * (a_cols + b_cols) + a_cols);
  }
}

const Problem& checked(const Model& model) {
  if (model.problem.dtype != DType::f32) throw std::invalid_argument("--dtype: training supports f32 only");
  return model.problem;
}
}  // namespace

Backprop::Backprop(OneDnnContext& ctx, Model& model)
    : model_(model),
      B_(checked(model).batch),
      L_(model.problem.src_len),
      T_(model.problem.tgt_len),
      M_(model.problem.emb_dim),
      E_(model.problem.enc_dim),
      D_(model.problem.dec_dim),
      V_(model.problem.vocab),
      h_(model.problem.enc_hidden()),
      encoder_(ctx, L_, B_, {&model.enc_fwd, &model.enc_bwd}, 1),
      cell_(ctx, 1, B_, {&model.cell}, static_cast<int>(T_)),
      bridge_(ctx, B_, model.bridge, dnnl::algorithm::eltwise_tanh),
      out_(ctx, T_ * B_, model.out),
      attend_(ctx, B_, L_, E_, T_, model.lengths),
      loss_(ctx, T_ * B_, V_),
      bridge_back_(ctx, B_, h_, D_, true, false),
      out_back_(ctx, T_ * B_, D_ + E_, V_, true, false),
      targets_(static_cast<std::size_t>(T_ * B_)),
      embedded_(zeros(B_ * L_ * M_)),
      annotations_(zeros(B_ * L_ * E_)),
      final_iter_(zeros(2 * B_ * h_)),
      states_(zeros((T_ + 1) * B_ * D_)),
      scores_(zeros(T_ * B_ * L_)),
      alphas_(zeros(T_ * B_ * L_)),
      context_(zeros(B_ * E_)),
      cell_in_(zeros(T_ * B_ * (M_ + E_))),
      out_in_(zeros(T_ * B_ * (D_ + E_))),
      logits_(zeros(T_ * B_ * V_)),
      dlogits_(zeros(T_ * B_ * V_)),
      dout_in_(zeros(T_ * B_ * (D_ + E_))),
      dstate_(zeros(B_ * D_)),
      dstate_prev_(zeros(B_ * D_)),
      dstate_scorer_(zeros(B_ * D_)),
      dcell_in_(zeros(B_ * (M_ + E_))),
      dcontexts_(zeros(T_ * B_ * E_)),
      dscores_(zeros(B_ * L_)),
      dbridge_(zeros(B_ * D_)),
      dfinal_iter_(zeros(2 * B_ * h_)),
      dannotations_(zeros(B_ * L_ * E_)),
      dembedded_(zeros(B_ * L_ * M_)) {
  model.scorer->build(ctx, Impl::onednn);
  model.scorer->build_backward(ctx);
  scorer_grads_.reserve(model.scorer->parameters().size());
}

void Backprop::reload() {
  encoder_.reload();
  cell_.reload();
  bridge_.reload();
  out_.reload();
  model_.scorer->reload();
}

double Backprop::forward(std::span<const std::int64_t> gold) {
  if (static_cast<std::int64_t>(gold.size()) != B_ * T_) throw std::invalid_argument("Backprop: gold must be (B, T)");
  for (std::int64_t b = 0; b < B_; ++b)
    for (std::int64_t t = 0; t < T_; ++t) targets_[static_cast<std::size_t>(t * B_ + b)] = gold[static_cast<std::size_t>(b * T_ + t)];
  for (std::int64_t r = 0; r < B_ * L_; ++r)
    std::copy_n(model_.src_emb.data() + model_.src_tokens[static_cast<std::size_t>(r)] * M_, M_,
                embedded_.data() + r * M_);
  encoder_.forward(0, embedded_.data(), nullptr, annotations_.data(), final_iter_.data());
  bridge_.run(final_iter_.data() + B_ * h_, states_.data());  // s_0 from the backward direction's last state
  model_.scorer->prepare(annotations_.data());
  attend_.set_lengths(model_.lengths);
  attend_.bind_annotations(annotations_.data());
  const std::int64_t in = M_ + E_;
  for (std::int64_t t = 0; t < T_; ++t) {
    const float* s = states_.data() + t * B_ * D_;
    float* e = scores_.data() + t * B_ * L_;
    model_.scorer->score(s, e);
    attend_.forward(e, alphas_.data() + t * B_ * L_, context_.data());
    float* x = cell_in_.data() + t * B_ * in;
    for (std::int64_t b = 0; b < B_; ++b) {
      const std::int64_t token = model_.tgt_tokens[static_cast<std::size_t>(b * T_ + t)];
      std::copy_n(model_.tgt_emb.data() + token * M_, M_, x + b * in);
      std::copy_n(context_.data() + b * E_, E_, x + b * in + M_);
    }
    float* next = states_.data() + (t + 1) * B_ * D_;
    cell_.forward(static_cast<int>(t), x, s, next, dstate_prev_.data());
    concat_rows(next, D_, context_.data(), E_, B_, out_in_.data() + t * B_ * (D_ + E_));
  }
  out_.run(out_in_.data(), logits_.data());
  return loss_.forward(logits_.data(), targets_.data());
}

void Backprop::backward(Gradients& g) {
  fill_zero(g.src_emb);
  fill_zero(g.tgt_emb);
  fill_zero(g.bridge);
  fill_zero(g.out);
  scorer_grads_.clear();
  for (std::vector<float>& s : g.scorer) {
    fill_zero(s);
    scorer_grads_.emplace_back(s);
  }
  loss_.backward(targets_.data(), dlogits_.data());
  out_back_.run(out_in_.data(), dlogits_.data(), model_.out.weight.data(), g.out.weight.data(), g.out.bias.data(),
                dout_in_.data());

  const std::int64_t in = M_ + E_;
  cell_.zero_grad();
  fill_zero(dstate_);
  for (std::int64_t t = T_ - 1; t >= 0; --t) {
    const float* dout = dout_in_.data() + t * B_ * (D_ + E_);
    for (std::int64_t b = 0; b < B_; ++b)
      for (std::int64_t k = 0; k < D_; ++k) dstate_[static_cast<std::size_t>(b * D_ + k)] += dout[b * (D_ + E_) + k];
    const float* s = states_.data() + t * B_ * D_;
    const float* next = s + B_ * D_;
    cell_.backward(static_cast<int>(t), cell_in_.data() + t * B_ * in, s, next, next, dstate_.data(), nullptr,
                   dcell_in_.data(), dstate_prev_.data());
    float* dc = dcontexts_.data() + t * B_ * E_;
    for (std::int64_t b = 0; b < B_; ++b) {
      const std::int64_t token = model_.tgt_tokens[static_cast<std::size_t>(b * T_ + t)];
      embedding_backward(dcell_in_.data() + b * in, &token, 1, M_, g.tgt_emb.data());
      for (std::int64_t k = 0; k < E_; ++k) dc[b * E_ + k] = dout[b * (D_ + E_) + D_ + k] + dcell_in_[static_cast<std::size_t>(b * in + M_ + k)];
    }
    attend_.backward_step(alphas_.data() + t * B_ * L_, dc, dscores_.data());
    model_.scorer->backward_score(s, dscores_.data(), dstate_scorer_.data(), scorer_grads_);
    for (std::size_t i = 0; i < dstate_.size(); ++i) dstate_[i] = dstate_prev_[i] + dstate_scorer_[i];
  }
  cell_.store_grads({&g.cell});

  // s_0 = tanh(z): dz = ds_0 (1 - s_0^2); the bridge's input is the backward direction's last state.
  for (std::size_t i = 0; i < dbridge_.size(); ++i) dbridge_[i] = dstate_[i] * (1.f - states_[i] * states_[i]);
  std::fill_n(dfinal_iter_.data(), B_ * h_, 0.f);
  bridge_back_.run(final_iter_.data() + B_ * h_, dbridge_.data(), model_.bridge.weight.data(), g.bridge.weight.data(),
                   g.bridge.bias.data(), dfinal_iter_.data() + B_ * h_);

  attend_.backward_annotations(alphas_.data(), dcontexts_.data(), dannotations_.data());
  model_.scorer->backward_keys(annotations_.data(), dannotations_.data(), scorer_grads_);
  encoder_.zero_grad();
  encoder_.backward(0, embedded_.data(), nullptr, annotations_.data(), final_iter_.data(), dannotations_.data(),
                    dfinal_iter_.data(), dembedded_.data(), nullptr);
  encoder_.store_grads({&g.enc_fwd, &g.enc_bwd});
  embedding_backward(dembedded_.data(), model_.src_tokens.data(), B_ * L_, M_, g.src_emb.data());
}

}  // namespace attnbench
