// `attnbench lesson`: every number the lesson's code blocks print, recomputed on
// oneDNN with --init torch --seed 0, beside the lesson's value.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/attend.hpp"
#include "core/attention_stats.hpp"
#include "core/attention_step.hpp"
#include "core/param_source.hpp"
#include "core/reference.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

constexpr std::int64_t kBatch = 2, kSrcLen = 10, kEncDim = 16, kDecDim = 20, kAttnDim = 32;
const ScorerShape kShape{kBatch, kSrcLen, kEncDim, kDecDim, kAttnDim};

// One printed quantity: what the lesson printed and what we computed.
struct Check {
  std::string block, name;
  std::vector<double> lesson, ours;
};

double round4(double x) { return std::round(x * 1e4) / 1e4; }

bool matches(const Check& c) {
  if (c.lesson.size() != c.ours.size()) return false;
  for (std::size_t i = 0; i < c.lesson.size(); ++i)
    if (std::abs(round4(c.ours[i]) - c.lesson[i]) > 1e-9) return false;
  return true;
}

std::string list(const std::vector<double>& values, bool rounded) {
  std::string out = "[";
  char text[32];
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::snprintf(text, sizeof text, rounded ? "%.4f" : "%g", rounded ? round4(values[i]) : values[i]);
    out += (i ? ", " : "") + std::string(text);
  }
  return out + "]";
}

std::vector<double> first(const std::vector<float>& v, std::size_t offset, std::size_t n) {
  return {v.begin() + static_cast<std::ptrdiff_t>(offset), v.begin() + static_cast<std::ptrdiff_t>(offset + n)};
}

std::vector<double> shape(std::initializer_list<double> dims) { return dims; }

// The shape of `tensor` as the lesson prints it, read from the tensor itself: the dims it was
// computed with, outermost first, whose last is what its size leaves (size / product of the
// others, fractional when it does not divide); {} when a value is NaN or infinite. So a
// tensor of the wrong size or with a broken value fails its `.shape` check.
std::vector<double> shape_of(const std::vector<float>& tensor, std::initializer_list<std::int64_t> outer) {
  if (!std::all_of(tensor.begin(), tensor.end(), [](float x) { return std::isfinite(x); })) return {};
  std::vector<double> dims(outer.begin(), outer.end());
  double rest = static_cast<double>(tensor.size());
  for (const double d : dims) rest /= d;
  dims.push_back(rest);
  return dims;
}

// The lesson's entropy, -(w * log(w + 1e-12)).sum(), of each row.
std::vector<double> lesson_entropy(const std::vector<float>& weights) {
  std::vector<double> out;
  for (std::int64_t b = 0; b < kBatch; ++b) {
    double h = 0.0;
    for (std::int64_t j = 0; j < kSrcLen; ++j) {
      const double w = weights[static_cast<std::size_t>(b * kSrcLen + j)];
      h -= w * std::log(w + 1e-12);
    }
    out.push_back(h);
  }
  return out;
}

std::vector<double> row_max(const std::vector<float>& weights) {
  std::vector<double> out;
  for (std::int64_t b = 0; b < kBatch; ++b)
    out.push_back(max_weight(ref::to_double(std::span(weights).subspan(static_cast<std::size_t>(b * kSrcLen), kSrcLen))));
  return out;
}

const std::vector<std::int64_t> kFullLengths(kBatch, kSrcLen);

// Blocks 1 and 2: encoder_states = randn(2, 10, 16); additive scores of decoder_hidden = randn(2, 20).
void additive_block(std::vector<Check>& checks, OneDnnContext& ctx) {
  ParamSource source(InitKind::torch, 0);
  const std::vector<float> H = make_randn(source, kBatch * kSrcLen * kEncDim);
  checks.push_back({"1 encoder", "encoder_states.shape", shape({2, 10, 16}), shape_of(H, {kBatch, kSrcLen})});
  const std::vector<float> s = make_randn(source, kBatch * kDecDim);
  auto scorer = find_scorer("additive").make(source, kShape);
  const AttentionStep step = run_attention_step(ctx, *scorer, kShape, H, s, kFullLengths);
  checks.push_back({"2 additive", "attention_scores.shape", shape({2, 10}), shape_of(step.scores, {kBatch})});
  checks.push_back({"2 additive", "attention_scores[0][:4]", {0.4903, 0.2351, -0.1706, 0.5322},
                    first(step.scores, 0, 4)});
}

// Block 3: softmax of random scores = randn(2, 10) and the context vector.
void softmax_block(std::vector<Check>& checks, OneDnnContext& ctx) {
  ParamSource source(InitKind::torch, 0);
  const std::vector<float> H = make_randn(source, kBatch * kSrcLen * kEncDim);
  std::vector<float> scores = make_randn(source, kBatch * kSrcLen);
  std::vector<float> weights(scores.size()), context(static_cast<std::size_t>(kBatch * kEncDim));
  Attend attend(ctx, kBatch, kSrcLen, kEncDim, kFullLengths);
  attend.softmax(scores.data(), weights.data());
  attend.bind_annotations(H.data());
  attend.context(weights.data(), context.data());
  std::vector<double> sums(kBatch, 0.0);
  for (std::int64_t b = 0; b < kBatch; ++b)
    for (std::int64_t j = 0; j < kSrcLen; ++j) sums[static_cast<std::size_t>(b)] += weights[static_cast<std::size_t>(b * kSrcLen + j)];
  checks.push_back({"3 softmax", "attention_weights.shape", shape({2, 10}), shape_of(weights, {kBatch})});
  checks.push_back({"3 softmax", "weight sums", {1.0, 1.0}, sums});
  checks.push_back({"3 softmax", "context_vector.shape", shape({2, 16}), shape_of(context, {kBatch})});
  checks.push_back({"3 softmax", "context_vector[0][:4]", {-0.5123, -0.5981, 0.2538, 0.298}, first(context, 0, 4)});
}

// Block 4 (the exercise): the same parameters with and without tanh.
void tanh_ablation_block(std::vector<Check>& checks, OneDnnContext& ctx) {
  ParamSource data(InitKind::torch, 0);
  const std::vector<float> H = make_randn(data, kBatch * kSrcLen * kEncDim);
  const std::vector<float> s = make_randn(data, kBatch * kDecDim);
  struct Row {
    const char* scorer;
    std::vector<double> max_w, entropy;
  };
  const Row rows[] = {{"additive", {0.1246, 0.1325}, {2.2885, 2.2873}},
                      {"additive_linear", {0.1666, 0.1522}, {2.2503, 2.2732}}};
  for (const Row& row : rows) {
    ParamSource params(InitKind::torch, 0);  // the lesson re-seeds before each model
    auto scorer = find_scorer(row.scorer).make(params, kShape);
    const AttentionStep step = run_attention_step(ctx, *scorer, kShape, H, s, kFullLengths);
    const std::string block = std::string("4 ") + row.scorer;
    checks.push_back({block, "max weight", row.max_w, row_max(step.weights)});
    checks.push_back({block, "weight entropy", row.entropy, lesson_entropy(step.weights)});
  }
}

int run_lesson() {
  OneDnnContext ctx(1);
  std::vector<Check> checks;
  additive_block(checks, ctx);
  softmax_block(checks, ctx);
  tanh_ablation_block(checks, ctx);

  std::printf("Lesson 000 (Bahdanau additive attention), --init torch --seed 0, on oneDNN %s\n",
              onednn_version().c_str());
  std::printf("%-18s %-26s %-36s %-36s %s\n", "block", "quantity", "lesson", "attnbench", "match");
  int mismatches = 0;
  for (const Check& c : checks) {
    const bool ok = matches(c);
    mismatches += ok ? 0 : 1;
    const bool is_shape = c.name.ends_with(".shape");
    std::printf("%-18s %-26s %-36s %-36s %s\n", c.block.c_str(), c.name.c_str(), list(c.lesson, !is_shape).c_str(),
                list(c.ours, !is_shape).c_str(), ok ? "yes" : "NO");
  }
  std::printf("%zu of %zu lesson results match at 4 decimals\n", checks.size() - static_cast<std::size_t>(mismatches),
              checks.size());
  return mismatches == 0 ? 0 : 1;
}

}  // namespace

void setup_lesson(CLI::App& app, int& exit_code) {
  CLI::App* sub = app.add_subcommand(
      "lesson", "Reproduce every printed result of the lesson's code blocks; exit 1 if any differs at 4 decimals");
  sub->callback([&exit_code] { exit_code = run_lesson(); });
}

}  // namespace attnbench
