// `attnbench compare`: ratios of medians with Mann-Whitney U p-values, run against run
// or scorer against scorer within one run.
#include <iostream>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "driver/compare.hpp"

namespace attnbench {

namespace {

struct CompareOptions {
  std::vector<std::string> runs;
  std::string baseline;
  double alpha = 0.05;
  bool csv = false;
};

int run_compare(const CompareOptions& o) {
  if (!(o.alpha > 0 && o.alpha < 1)) throw std::invalid_argument("--alpha: must be in (0, 1), got " + std::to_string(o.alpha));
  CompareResult result;
  if (!o.baseline.empty()) {
    if (o.runs.size() != 1)
      throw std::invalid_argument("--baseline: compares scorers within ONE run; got " + std::to_string(o.runs.size()) + " runs");
    const std::size_t equals = o.baseline.find('=');
    const std::string column = equals == std::string::npos ? "scorer" : o.baseline.substr(0, equals);
    const std::string value = equals == std::string::npos ? o.baseline : o.baseline.substr(equals + 1);
    result = compare_to_baseline(load_run(o.runs[0]), column, value, o.alpha);
  } else {
    if (o.runs.size() != 2)
      throw std::invalid_argument("compare: give OLD and NEW (run folders or timing.csv files), or one run with --baseline SCORER");
    result = compare_runs(load_run(o.runs[0]), load_run(o.runs[1]), o.alpha);
  }
  std::cout << (o.csv ? format_csv(result) : format_table(result));
  return 0;
}

}  // namespace

void setup_compare(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Compare two runs (OLD NEW: run folders or timing.csv files), or within one run (RUN --baseline S).\n"
      "Rows match on the timing key columns; each shows the ratio of medians (new/old), the Mann-Whitney U\n"
      "p-value over the raw repetition samples, and whether the change is significant; then a geometric mean\n"
      "of the ratios per scorer.");
  sub->add_option("runs", o->runs, "OLD NEW, or one RUN with --baseline")->required();
  sub->add_option("--baseline", o->baseline,
                  "Compare within the run against this scorer, or COLUMN=VALUE for another key column "
                  "(e.g. impl=onednn, threads=1)");
  sub->add_option("--alpha", o->alpha, "Significance level")->capture_default_str();
  sub->add_flag("--csv", o->csv, "Print the table as CSV");
  sub->callback([o, &exit_code] { exit_code = run_compare(*o); });
}

}  // namespace attnbench
