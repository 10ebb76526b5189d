#include "driver/train_rows.hpp"

#include <cmath>
#include <cstdio>

#include "driver/csv_io.hpp"

namespace attnbench {

std::vector<std::string> train_key_columns() {
  return {
#define ATTNBENCH_TRAIN_KEY(column) #column,
#include "driver/train_columns.def"
  };
}

std::vector<std::string> train_curve_header() {
  std::vector<std::string> h = train_key_columns();
#define ATTNBENCH_TRAIN_CURVE(column, unit, definition) h.emplace_back(#column);
#include "driver/train_columns.def"
  return h;
}

std::vector<std::string> train_final_header() {
  std::vector<std::string> h = train_key_columns();
#define ATTNBENCH_TRAIN_FINAL(column, unit, definition) h.emplace_back(#column);
#include "driver/train_columns.def"
  return h;
}

std::vector<std::string> train_setting_columns() { return {"steps", "eval_every", "eval_size", "long_len"}; }

std::vector<std::string> train_settings(const TrainSetup& setup) {
  return {std::to_string(setup.steps), std::to_string(setup.eval_every), std::to_string(setup.eval_size),
          std::to_string(setup.long_len)};
}

std::string metric_cell(double value) {
  if (std::isnan(value)) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::vector<std::string> train_key(const TrainSetup& setup) {
  const Problem& p = setup.problem;
  return {setup.task,
          p.scorer,
          to_string(Impl::onednn),
          to_string(DType::f32),
          std::to_string(p.threads),
          std::to_string(p.batch),
          std::to_string(p.effective_len_min()),
          std::to_string(p.src_len),
          std::to_string(p.emb_dim),
          std::to_string(p.enc_dim),
          std::to_string(p.dec_dim),
          std::to_string(p.attn_dim),
          metric_cell(setup.lr),
          metric_cell(setup.clip),
          std::to_string(p.seed)};
}

std::string train_curve_rows(const TrainSetup& setup, const TrainOutcome& outcome) {
  std::string text;
  for (const CurvePoint& c : outcome.curve) {
    std::vector<std::string> cells = train_key(setup);
    for (double v : {static_cast<double>(c.step), c.seconds, c.train_loss, c.eval.loss, c.eval.token_acc,
                     c.eval.seq_acc, c.eval.align_acc, c.eval.gold_mass, c.eval.entropy_norm})
      cells.push_back(metric_cell(v));
    text += csv_line(cells);
  }
  return text;
}

std::vector<std::string> train_attention_header() {
  std::vector<std::string> h = train_key_columns();
#define ATTNBENCH_TRAIN_ATTENTION(column, unit, definition) h.emplace_back(#column);
#include "driver/train_columns.def"
  return h;
}

std::string train_attention_rows(const TrainSetup& setup, const TrainOutcome& outcome) {
  const AttentionMap& map = outcome.example;
  const std::size_t L = map.source.size();
  std::string text;
  for (std::size_t t = 0; L > 0 && t < map.weights.size() / L; ++t)
    for (std::size_t j = 0; j < L; ++j) {
      std::vector<std::string> cells = train_key(setup);
      cells.push_back(std::to_string(t));
      cells.push_back(std::to_string(j));
      cells.push_back(metric_cell(map.weights[t * L + j]));
      cells.push_back(std::to_string(map.source[j]));
      cells.push_back(t < map.target.size() ? std::to_string(map.target[t]) : "EOS");
      text += csv_line(cells);
    }
  return text;
}

std::string train_final_row(const TrainSetup& setup, const TrainOutcome& o) {
  std::vector<std::string> cells = train_key(setup);
  cells.push_back(o.status);
  const double steps = static_cast<double>(o.steps);
  const Quality& q = o.final_eval;
  for (double v : {steps, o.train_seconds, steps > 0 ? 1e3 * o.train_seconds / steps : NAN,
                   o.train_seconds > 0 ? static_cast<double>(o.train_tokens) / o.train_seconds : NAN, q.loss,
                   q.token_acc, q.seq_acc, q.align_acc, q.gold_mass, q.entropy_norm, q.drift, o.long_eval.seq_acc,
                   o.long_eval.align_acc})
    cells.push_back(metric_cell(v));
  return csv_line(cells);
}

}  // namespace attnbench
