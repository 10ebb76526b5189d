// `attnbench grad`: K Adam steps on one batch, then the loss and every gradient as CSV.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/probe_output.hpp"
#include "cli/problem_flags.hpp"
#include "core/model.hpp"
#include "core/onednn_context.hpp"
#include "train/trainer.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {

struct GradOptions {
  ProblemFlags flags;
  std::string lengths;
  std::int64_t adam_steps = 0;
  TrainOptions train;
};

// Draws the model, src and tgt as `probe --steps T` does, then gold = randint(0, vocab, (B, T)).
std::string grad_csv(const GradOptions& options) {
  const Problem p = to_problem(options.flags);
  if (p.impl != Impl::onednn) throw std::invalid_argument("--impl: grad computes with onednn only, got fused");
  if (p.dtype != DType::f32) throw std::invalid_argument("--dtype: grad supports f32 only, got bf16");
  ParamSource source(p.init, p.seed);
  Model model = make_model(source, p, find_scorer(p.scorer).make);
  model.lengths = parse_lengths(options.lengths, p);
  std::vector<std::int64_t> gold(static_cast<std::size_t>(p.batch * p.tgt_len));
  source.randint(gold, 0, p.vocab);

  OneDnnContext ctx(p.threads, p.dtype);
  Trainer trainer(ctx, model, std::move(gold), options.train);
  for (std::int64_t k = 0; k < options.adam_steps; ++k) trainer.step();
  const double loss = trainer.forward_backward();

  std::string csv = "name,i,value\nloss,0," + format_value(loss) + "\n";
  for (const NamedTensor& g : trainer.gradients())
    for (std::size_t i = 0; i < g.data.size(); ++i)
      csv += "grad." + g.name + "," + std::to_string(i) + "," + format_value(g.data[i]) + "\n";
  return csv;
}

// Accepts a number that is > 0 (strictly) or >= 0; the message names the value.
CLI::Validator number_above(double bound, bool inclusive) {
  const std::string rule = std::string(inclusive ? "0 or more" : "more than 0");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const bool parsed = CLI::detail::lexical_cast(text, value);
        if (parsed && (inclusive ? value >= bound : value > bound)) return {};
        return "must be a number " + rule + ", got '" + text + "'";
      },
      inclusive ? "NUMBER >= 0" : "NUMBER > 0");
}

}  // namespace

void setup_grad(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<GradOptions>();
  CLI::App* sub = app.add_subcommand(
      "grad",
      "Train on one batch for --adam-steps K steps (forward, cross-entropy, backward, clip_grad_norm_, Adam),\n"
      "then print the loss of one more forward and the gradients of its backward (before clipping) as CSV\n"
      "`name,i,value`: `loss,0,L`, then `grad.<PyTorch parameter name>,<flat row-major index>,<value>`.\n"
      "Under --init torch it draws what `probe --steps T` draws (T = --tgt-len), then\n"
      "gold = torch.randint(0, vocab, (B, T)); scripts/torch_twin.py grad prints PyTorch's numbers.");
  add_problem_flags(*sub, options->flags);
  sub->add_option("--lengths", options->lengths, "Comma list of valid source lengths, one per example (e.g. 10,7)");
  sub->add_option("--adam-steps", options->adam_steps, "Optimizer steps on the batch before the printed backward")
      ->check(number_above(0, true))
      ->capture_default_str();
  sub->add_option("--lr", options->train.lr, "Adam's learning rate")->check(number_above(0, false))->capture_default_str();
  sub->add_option("--clip", options->train.clip, "Max global L2 norm of the gradients (clip_grad_norm_)")
      ->check(number_above(0, false))
      ->capture_default_str();
  sub->callback([options, &exit_code] {
    const std::string csv = grad_csv(*options);
    std::fputs(csv.c_str(), stdout);
    exit_code = 0;
  });
}

}  // namespace attnbench
