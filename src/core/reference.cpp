#include "core/reference.hpp"

#include <cmath>
#include <limits>

namespace attnbench::ref {

namespace {
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }
}  // namespace

std::vector<double> to_double(std::span<const float> v) { return {v.begin(), v.end()}; }

std::vector<double> linear(std::span<const double> x, std::int64_t rows, const LinearParams& p) {
  std::vector<double> y(at(rows * p.out));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t o = 0; o < p.out; ++o) {
      double sum = p.bias.empty() ? 0.0 : p.bias[at(o)];
      for (std::int64_t i = 0; i < p.in; ++i) sum += x[at(r * p.in + i)] * p.weight[at(o * p.in + i)];
      y[at(r * p.out + o)] = sum;
    }
  return y;
}

void tanh_inplace(std::vector<double>& x) {
  for (double& v : x) v = std::tanh(v);
}

std::vector<double> masked_softmax(std::vector<double>& e, std::int64_t batch, std::int64_t src_len,
                                   std::span<const std::int64_t> lengths) {
  std::vector<double> alpha(e.size(), 0.0);
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t n = lengths[at(b)];
    double* row = e.data() + b * src_len;
    for (std::int64_t j = n; j < src_len; ++j) row[j] = -std::numeric_limits<double>::infinity();
    double top = row[0];
    for (std::int64_t j = 1; j < n; ++j) top = std::max(top, row[j]);
    double sum = 0.0;
    for (std::int64_t j = 0; j < n; ++j) sum += std::exp(row[j] - top);
    for (std::int64_t j = 0; j < n; ++j) alpha[at(b * src_len + j)] = std::exp(row[j] - top) / sum;
  }
  return alpha;
}

std::vector<double> context(std::span<const double> alpha, std::span<const double> H, std::int64_t batch,
                            std::int64_t src_len, std::int64_t enc_dim) {
  std::vector<double> c(at(batch * enc_dim), 0.0);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t j = 0; j < src_len; ++j)
      for (std::int64_t k = 0; k < enc_dim; ++k)
        c[at(b * enc_dim + k)] += alpha[at(b * src_len + j)] * H[at((b * src_len + j) * enc_dim + k)];
  return c;
}

std::vector<double> gru_cell(std::span<const double> x, std::span<const double> h, std::int64_t batch,
                             const GruParams& p) {
  const std::int64_t n = p.hidden;
  const LinearParams ih{p.input, 3 * n, p.w_ih, p.b_ih};
  const LinearParams hh{n, 3 * n, p.w_hh, p.b_hh};
  const std::vector<double> gi = linear(x, batch, ih), gh = linear(h, batch, hh);
  std::vector<double> out(at(batch * n));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t o = 0; o < n; ++o) {
      const auto g = [&](const std::vector<double>& v, int gate) { return v[at(b * 3 * n + gate * n + o)]; };
      const double r = sigmoid(g(gi, 0) + g(gh, 0));
      const double z = sigmoid(g(gi, 1) + g(gh, 1));
      const double cand = std::tanh(g(gi, 2) + r * g(gh, 2));
      out[at(b * n + o)] = (1.0 - z) * cand + z * h[at(b * n + o)];
    }
  return out;
}

namespace {
// Rows of a (B, T, C) tensor at time t, as (B, C).
std::vector<double> time_slice(const std::vector<double>& x, std::int64_t batch, std::int64_t steps,
                               std::int64_t cols, std::int64_t t) {
  std::vector<double> out(at(batch * cols));
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t c = 0; c < cols; ++c) out[at(b * cols + c)] = x[at((b * steps + t) * cols + c)];
  return out;
}

std::vector<double> embed(const std::vector<float>& table, std::int64_t dim, std::span<const std::int64_t> tokens) {
  std::vector<double> out;
  out.reserve(tokens.size() * at(dim));
  for (std::int64_t token : tokens)
    out.insert(out.end(), table.begin() + token * dim, table.begin() + (token + 1) * dim);
  return out;
}

// Concatenates rows: (B, a) and (B, b) -> (B, a + b).
std::vector<double> concat(const std::vector<double>& x, std::int64_t a, const std::vector<double>& y,
                           std::int64_t b, std::int64_t batch) {
  std::vector<double> out;
  out.reserve(at(batch * (a + b)));
  for (std::int64_t r = 0; r < batch; ++r) {
    out.insert(out.end(), x.begin() + r * a, x.begin() + (r + 1) * a);
    out.insert(out.end(), y.begin() + r * b, y.begin() + (r + 1) * b);
  }
  return out;
}
}  // namespace

DecodeTrace decode(const Model& m) {
  const Problem& p = m.problem;
  const std::int64_t B = p.batch, L = p.src_len, E = p.enc_dim, h = p.enc_hidden(), M = p.emb_dim;
  const std::vector<double> x = embed(m.src_emb, M, m.src_tokens);  // (B, L, M)

  DecodeTrace trace;
  trace.annotations.assign(at(B * L * E), 0.0);
  std::vector<double> fwd(at(B * h), 0.0), bwd(at(B * h), 0.0);
  for (std::int64_t t = 0; t < L; ++t) {
    fwd = gru_cell(time_slice(x, B, L, M, t), fwd, B, m.enc_fwd);
    const std::int64_t r = L - 1 - t;
    bwd = gru_cell(time_slice(x, B, L, M, r), bwd, B, m.enc_bwd);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t k = 0; k < h; ++k) {
        trace.annotations[at((b * L + t) * E + k)] = fwd[at(b * h + k)];
        trace.annotations[at((b * L + r) * E + h + k)] = bwd[at(b * h + k)];
      }
  }
  std::vector<double> s = linear(bwd, B, m.bridge);
  tanh_inplace(s);
  trace.initial_state = s;

  for (std::int64_t t = 0; t < p.tgt_len; ++t) {
    StepRecord step;
    step.scores = m.scorer->reference_score(s, trace.annotations);
    step.weights = masked_softmax(step.scores, B, L, m.lengths);
    step.context = context(step.weights, trace.annotations, B, L, E);
    std::vector<std::int64_t> column(at(B));
    for (std::int64_t b = 0; b < B; ++b) column[at(b)] = m.tgt_tokens[at(b * p.tgt_len + t)];
    const std::vector<double> input = concat(embed(m.tgt_emb, M, column), M, step.context, E, B);
    s = gru_cell(input, s, B, m.cell);
    step.state = s;
    step.logits = linear(concat(s, p.dec_dim, step.context, E, B), B, m.out);
    trace.steps.push_back(std::move(step));
  }
  return trace;
}

double decode_loss(const Model& m, std::span<const std::int64_t> gold, std::int64_t ignore) {
  const DecodeTrace trace = decode(m);
  const std::int64_t B = m.problem.batch, T = m.problem.tgt_len, V = m.problem.vocab;
  double sum = 0.0;
  std::int64_t counted = 0;
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t target = gold[at(b * T + t)];
      if (target == ignore) continue;
      const double* row = trace.steps[at(t)].logits.data() + b * V;
      double top = row[0];
      for (std::int64_t v = 1; v < V; ++v) top = std::max(top, row[v]);
      double total = 0.0;
      for (std::int64_t v = 0; v < V; ++v) total += std::exp(row[v] - top);
      sum += top + std::log(total) - row[target];
      ++counted;
    }
  return counted ? sum / static_cast<double>(counted) : 0.0;
}

}  // namespace attnbench::ref
