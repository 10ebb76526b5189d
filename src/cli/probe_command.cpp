// `attnbench probe`: one attention step (or, with --steps, a whole decode) as CSV.
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.hpp"
#include "cli/problem_flags.hpp"
#include "cli/probe_output.hpp"
#include "core/attention_step.hpp"
#include "core/harness.hpp"
#include "core/model.hpp"
#include "core/onednn_context.hpp"
#include "core/reference.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

struct ProbeOptions {
  ProblemFlags flags;
  std::string lengths;
  std::int64_t steps = 0;
  std::string tensors;  // comma list; empty: all
};

// One attention step on random H and s, drawn as the lesson does:
// H = randn(B, L, E), s = randn(B, D), then the scorer's parameters.
// The tensors named by --tensors ("weights,scores"), checked against what the mode prints.
std::set<std::string> wanted_tensors(const std::string& text, const std::set<std::string>& known) {
  std::set<std::string> wanted;
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (!known.contains(name)) {
      throw std::invalid_argument(
          fmt::format("--tensors: unknown tensor '{}'; this mode prints {}", name, fmt::join(known, ", ")));
    }
    wanted.insert(name);
  }
  return wanted;
}

std::string probe_one_step(const Problem& p, const std::vector<std::int64_t>& lengths,
                           const std::set<std::string>& wanted) {
  ParamSource source(p.init, p.seed);
  const std::vector<float> H = make_randn(source, p.batch * p.src_len * p.enc_dim);
  const std::vector<float> s = make_randn(source, p.batch * p.dec_dim);
  const ScorerShape shape{p.batch, p.src_len, p.enc_dim, p.dec_dim, p.attn_dim};
  std::unique_ptr<Scorer> scorer = find_scorer(p.scorer).make(source, shape);

  OneDnnContext ctx(p.threads, p.dtype);
  const AttentionStep step = run_attention_step(ctx, *scorer, shape, H, s, lengths, p.impl);

  CsvTable table({"tensor", "b", "i", "value"}, wanted);
  add_matrix(table, "scores", std::nullopt, ref::to_double(step.scores), p.batch);
  add_matrix(table, "weights", std::nullopt, ref::to_double(step.weights), p.batch);
  add_matrix(table, "context", std::nullopt, ref::to_double(step.context), p.batch);
  return table.str();
}

// The whole harness for T = --steps decode steps, every tensor of every step.
std::string probe_decode(Problem p, const std::vector<std::int64_t>& lengths, const std::set<std::string>& wanted) {
  Model model = make_model(p, find_scorer(p.scorer).make);
  model.lengths = lengths;
  OneDnnContext ctx(p.threads, p.dtype);
  Harness harness(ctx, model);
  const DecodeTrace trace = harness.run_traced();

  CsvTable table({"tensor", "t", "b", "i", "value"}, wanted);
  add_matrix(table, "annotations", "", trace.annotations, p.batch);
  add_matrix(table, "state", "0", trace.initial_state, p.batch);
  for (std::size_t t = 0; t < trace.steps.size(); ++t) {
    const StepRecord& step = trace.steps[t];
    const std::string at = std::to_string(t + 1);
    add_matrix(table, "scores", at, step.scores, p.batch);
    add_matrix(table, "weights", at, step.weights, p.batch);
    add_matrix(table, "context", at, step.context, p.batch);
    add_matrix(table, "state", at, step.state, p.batch);
    add_matrix(table, "logits", at, step.logits, p.batch);
  }
  return table.str();
}

int run_probe(const ProbeOptions& options) {
  Problem p = to_problem(options.flags);
  if (options.steps < 0) throw std::invalid_argument("--steps: must be 0 or more, got " + std::to_string(options.steps));
  if (options.steps > 0) {
    p.tgt_len = options.steps;
    validate(p);
  }
  const std::vector<std::int64_t> lengths = parse_lengths(options.lengths, p);
  const std::string csv =
      options.steps > 0
          ? probe_decode(p, lengths,
                         wanted_tensors(options.tensors, {"annotations", "state", "scores", "weights", "context", "logits"}))
          : probe_one_step(p, lengths, wanted_tensors(options.tensors, {"scores", "weights", "context"}));
  std::fputs(csv.c_str(), stdout);
  return 0;
}

}  // namespace

void setup_probe(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<ProbeOptions>();
  CLI::App* sub = app.add_subcommand(
      "probe",
      "Run one attention step (or --steps T decode steps) and print every tensor as CSV.\n"
      "One step prints `tensor,b,i,value` for scores, weights and context; under --init torch it draws\n"
      "H = randn(B, L, E), s = randn(B, D), then the scorer's parameters, exactly as the lesson does.\n"
      "With --steps T it runs the whole encoder-decoder and prints `tensor,t,b,i,value`.");
  add_problem_flags(*sub, options->flags);
  sub->add_option("--lengths", options->lengths, "Comma list of valid source lengths, one per example (e.g. 10,7)");
  sub->add_option("--steps", options->steps, "Run the whole harness for this many decode steps (0: one attention step)")
      ->capture_default_str();
  sub->add_option("--tensors", options->tensors,
                  "Print only these tensors (comma list), e.g. `--steps 20 --tensors weights` for the T x L weights");
  sub->callback([options, &exit_code] { exit_code = run_probe(*options); });
}

}  // namespace attnbench
