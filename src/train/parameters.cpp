#include "train/parameters.hpp"

#include <algorithm>

namespace attnbench {

namespace {
std::vector<float> zeros_like(const std::vector<float>& v) { return std::vector<float>(v.size(), 0.f); }

GruParams zeros_like(const GruParams& p) {
  return {p.input, p.hidden, zeros_like(p.w_ih), zeros_like(p.w_hh), zeros_like(p.b_ih), zeros_like(p.b_hh)};
}

LinearParams zeros_like(const LinearParams& p) { return {p.in, p.out, zeros_like(p.weight), zeros_like(p.bias)}; }

void add_gru(std::vector<NamedTensor>& out, const std::string& prefix, const std::string& suffix, GruParams& p) {
  const std::int64_t rows = 3 * p.hidden;
  out.push_back({prefix + "weight_ih" + suffix, {rows, p.input}, p.w_ih});
  out.push_back({prefix + "weight_hh" + suffix, {rows, p.hidden}, p.w_hh});
  out.push_back({prefix + "bias_ih" + suffix, {rows}, p.b_ih});
  out.push_back({prefix + "bias_hh" + suffix, {rows}, p.b_hh});
}

void add_linear(std::vector<NamedTensor>& out, const std::string& prefix, LinearParams& p) {
  out.push_back({prefix + "weight", {p.out, p.in}, p.weight});
  if (!p.bias.empty()) out.push_back({prefix + "bias", {p.out}, p.bias});
}

// The one list of names: values come from `src` (the model or its gradients) and the scorer's spans.
template <typename Source>
std::vector<NamedTensor> named(Source& src, const Problem& p, const std::vector<ParamView>& scorer,
                               std::span<std::span<float>> scorer_data) {
  std::vector<NamedTensor> out;
  out.push_back({"src_emb.weight", {p.vocab, p.emb_dim}, src.src_emb});
  out.push_back({"tgt_emb.weight", {p.vocab, p.emb_dim}, src.tgt_emb});
  add_gru(out, "encoder.", "_l0", src.enc_fwd);
  add_gru(out, "encoder.", "_l0_reverse", src.enc_bwd);
  add_linear(out, "bridge.", src.bridge);
  for (std::size_t i = 0; i < scorer.size(); ++i)
    out.push_back({std::string("scorer.") + scorer[i].name, scorer[i].shape, scorer_data[i]});
  add_gru(out, "cell.", "", src.cell);
  add_linear(out, "out.", src.out);
  return out;
}
}  // namespace

std::vector<std::span<float>> Gradients::scorer_spans() {
  return {scorer.begin(), scorer.end()};
}

Gradients make_gradients(Model& model) {
  Gradients g;
  g.src_emb = zeros_like(model.src_emb);
  g.tgt_emb = zeros_like(model.tgt_emb);
  g.enc_fwd = zeros_like(model.enc_fwd);
  g.enc_bwd = zeros_like(model.enc_bwd);
  g.bridge = zeros_like(model.bridge);
  for (const ParamView& v : model.scorer->parameters()) g.scorer.emplace_back(v.value.size(), 0.f);
  g.cell = zeros_like(model.cell);
  g.out = zeros_like(model.out);
  return g;
}

std::vector<NamedTensor> named_parameters(Model& model) {
  const std::vector<ParamView> views = model.scorer->parameters();
  std::vector<std::span<float>> values;
  for (const ParamView& v : views) values.push_back(v.value);
  return named(model, model.problem, views, values);
}

std::vector<NamedTensor> named_gradients(Gradients& grads, Model& model) {
  std::vector<std::span<float>> spans = grads.scorer_spans();
  return named(grads, model.problem, model.scorer->parameters(), spans);
}

}  // namespace attnbench
