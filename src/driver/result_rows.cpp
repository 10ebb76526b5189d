#include "driver/result_rows.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/onednn_context.hpp"
#include "driver/cost_model.hpp"
#include "driver/csv_io.hpp"
#include "driver/schema.hpp"
#include "driver/statistics.hpp"

namespace attnbench {

std::string number(double x) { return fmt::format("{:.9g}", x); }

namespace {

// The cells of `columns` for p: Problem fields as the grid prints them; `stage` is not
// a Problem field and comes from the caller.
template <std::size_t N>
std::vector<std::string> key_cells(const std::array<std::string_view, N>& columns, const Problem& p,
                                   std::string_view stage) {
  const auto fields = field_values(p);
  std::vector<std::string> cells;
  for (std::string_view column : columns) {
    if (column == "stage") {
      cells.emplace_back(stage);
    } else {
      const auto found = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == column; });
      cells.push_back(found->second);
    }
  }
  return cells;
}

}  // namespace

std::vector<std::string> timing_key(const Problem& p, std::string_view stage) {
  return key_cells(schema::kTimingKey, p, stage);
}

std::vector<std::string> entropy_key(const Problem& p) { return key_cells(schema::kEntropyKey, p, ""); }

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
  const double per_step = schema::is_sequence_stage(stage) ? stats.median / static_cast<double>(p.tgt_len) : stats.median;
  const double gflops = cost.flops / stats.median, gbps = cost.bytes / stats.median;  // per ns = G per s
  // Where oneDNN has no bf16 matmul a bf16 row multiplies in f32 (OneDnnContext): the f32 peak.
  const DType roof = p.dtype == DType::bf16 && onednn_has_bf16_matmul() ? DType::bf16 : DType::f32;
  const std::string pct = roofline ? number(roofline->percent(p.threads, roof, cost, stats.median)) : "";
  const std::string bound = roofline ? roofline->bound(p.threads, roof, cost) : "";
  const std::vector<std::string> values = {
      std::to_string(samples.size()), std::to_string(iterations), number(stats.median), number(stats.mean),
      number(stats.stddev), number(stats.cv), number(stats.min), number(stats.max), number(per_step),
      number(cost.flops), number(cost.bytes), number(gflops), number(gbps), pct, bound, "ok", repro};
  return csv_line(joined(timing_key(p, stage), values));
}

}  // namespace

PointRows measured_rows(const Problem& p, const ScorerMeasurement& m, const std::optional<Roofline>& roofline,
                        const std::string& repro, bool with_entropy) {
  PointRows rows;
  for (std::string_view stage : schema::kStages) {
    const auto found = m.samples.find(stage);
    if (found == m.samples.end()) continue;  // a stage not timed (--stages) has no rows
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

std::string skipped_rows(const Problem& p, const std::string& status, const std::string& repro,
                         const std::vector<std::string>& stages) {
  std::string rows;
  for (std::string_view stage : stages) {
    std::vector<std::string> values(schema::kTimingValues.size());
    values[values.size() - 2] = status;
    values[values.size() - 1] = repro;
    rows += csv_line(joined(timing_key(p, stage), values));
  }
  return rows;
}

}  // namespace attnbench
