// `attnbench plot RUN` and `attnbench report RUN`: the figures and the HTML report,
// drawn by scripts/plot.py and scripts/report.py (matplotlib on Debian's python3).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/source_paths.hpp"
#include "driver/folder_kind.hpp"

namespace attnbench {

namespace {

struct ScriptOptions {
  std::string run;
  std::vector<std::string> extra;
};

// Replaces this process with `python script RUN --attnbench <this binary> extra...`;
// returns only when that cannot start.
int exec_script(const char* script, const ScriptOptions& o) {
  const std::string run_rows = finished_rows_file(FolderKind::run), train_rows = finished_rows_file(FolderKind::train);
  if (!std::filesystem::is_regular_file(std::filesystem::path(o.run) / run_rows) &&
      !std::filesystem::is_regular_file(std::filesystem::path(o.run) / train_rows))
    throw std::invalid_argument("RUN: '" + o.run + "' is not a run folder (no " + run_rows + " or " + train_rows + ")");
  const std::filesystem::path path = project_root() / "scripts" / script;
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error(path.string() + " not found");
  std::vector<std::string> args = {ATTNBENCH_PYTHON, path.string(), o.run, "--attnbench",
                                   std::filesystem::read_symlink("/proc/self/exe").string()};
  args.insert(args.end(), o.extra.begin(), o.extra.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  ::setenv("ATTNBENCH_BINARY", args[4].c_str(), 1);  // the script's lists come from this binary
  ::execv(ATTNBENCH_PYTHON, argv.data());
  throw std::runtime_error(std::string("cannot run ") + ATTNBENCH_PYTHON + ": " + std::strerror(errno) +
                           " (scripts/test installs python3-matplotlib)");
}

void setup_script(CLI::App& app, int& exit_code, const char* name, const char* script, const std::string& help) {
  auto o = std::make_shared<ScriptOptions>();
  CLI::App* sub = app.add_subcommand(name, help);
  sub->add_option("run", o->run, "Run folder (results/<scenario>/<time>/)")->required();
  sub->add_option("extra", o->extra, "Passed on to the script (see its --help)");
  sub->callback([o, &exit_code, script] { exit_code = exec_script(script, *o); });
}

}  // namespace

void setup_plot(CLI::App& app, int& exit_code) {
  setup_script(app, exit_code, "plot", "plot.py",
               "Draw the run's figures (PNG and SVG) into RUN/figures/: time against src_len and attn_dim, thread\n"
               "speedup, entropy, drift, cost against entropy, and attention heatmaps (scripts/plot.py)");
}

void setup_report(CLI::App& app, int& exit_code) {
  setup_script(app, exit_code, "report", "report.py",
               "Write RUN/report.html: one self-contained file with the machine, the command, the summary\n"
               "tables, every figure and the measured findings (scripts/report.py)");
}

}  // namespace attnbench
