#include "driver/result_rows.hpp"

#include <cstdio>

#include "driver/cost_model.hpp"
#include "driver/csv_io.hpp"
#include "driver/schema.hpp"
#include "driver/statistics.hpp"

namespace attnbench {

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return text;
}

std::vector<std::string> timing_key(const Problem& p, std::string_view stage, std::string_view impl) {
  return {p.scorer,
          std::string(impl),
          to_string(p.dtype),
          std::to_string(p.threads),
          std::to_string(p.batch),
          std::to_string(p.src_len),
          std::to_string(p.tgt_len),
          std::to_string(p.emb_dim),
          std::to_string(p.enc_dim),
          std::to_string(p.dec_dim),
          std::to_string(p.attn_dim),
          std::to_string(p.vocab),
          std::string(stage)};
}

std::vector<std::string> entropy_key(const Problem& p) {
  return {p.scorer,
          to_string(p.dtype),
          std::to_string(p.batch),
          std::to_string(p.src_len),
          std::to_string(p.tgt_len),
          std::to_string(p.enc_dim),
          std::to_string(p.dec_dim),
          std::to_string(p.attn_dim),
          to_string(p.init),
          std::to_string(p.seed),
          std::to_string(p.len_min)};
}

namespace {

template <typename... Parts>
std::vector<std::string> joined(std::vector<std::string> head, const Parts&... parts) {
  (head.insert(head.end(), parts.begin(), parts.end()), ...);
  return head;
}

std::string timing_row(const Problem& p, std::string_view stage, const std::vector<Sample>& samples,
                       const std::optional<Roofline>& roofline, const std::string& repro) {
  std::vector<double> ns;
  std::int64_t iterations = 0;
  for (const Sample& s : samples) {
    ns.push_back(s.ns);
    iterations += s.iterations;
  }
  const SampleStats stats = summarize(ns);
  const StageCost cost = stage_cost(p, stage);
  const double per_step = is_sequence_stage(stage) ? stats.median / static_cast<double>(p.tgt_len) : stats.median;
  const double gflops = cost.flops / stats.median, gbps = cost.bytes / stats.median;  // per ns = G per s
  const std::string pct = roofline ? number(roofline->percent(p.threads, cost, stats.median)) : "";
  const std::vector<std::string> values = {
      std::to_string(samples.size()), std::to_string(iterations), number(stats.median), number(stats.mean),
      number(stats.stddev), number(stats.cv), number(stats.min), number(stats.max), number(per_step),
      number(cost.flops), number(cost.bytes), number(gflops), number(gbps), pct, "ok", repro};
  return csv_line(joined(timing_key(p, stage), values));
}

}  // namespace

PointRows measured_rows(const Problem& p, const ScorerMeasurement& m, const std::optional<Roofline>& roofline,
                        const std::string& repro, bool with_entropy) {
  PointRows rows;
  for (std::string_view stage : schema::kStages) {
    const auto found = m.samples.find(stage);
    const std::vector<Sample>& samples = found->second;
    rows.timing += timing_row(p, stage, samples, roofline, repro);
    for (const Sample& s : samples)
      rows.samples += csv_line(joined(timing_key(p, stage), std::vector<std::string>{
                                                              std::to_string(s.repetition),
                                                              std::to_string(s.iterations), number(s.ns)}));
  }
  if (with_entropy) rows.entropy = csv_line(joined(entropy_key(p), metric_cells(m.metrics)));
  return rows;
}

std::string skipped_rows(const Problem& p, const std::string& status, const std::string& repro) {
  std::string rows;
  for (std::string_view stage : schema::kStages) {
    std::vector<std::string> values(schema::kTimingValues.size());
    values[values.size() - 2] = status;
    values[values.size() - 1] = repro;
    rows += csv_line(joined(timing_key(p, stage), values));
  }
  return rows;
}

}  // namespace attnbench
