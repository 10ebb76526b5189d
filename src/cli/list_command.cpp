// `attnbench list`: the scorers (formula, parameters, paper) and the scenario files.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/source_paths.hpp"
#include "variants/registry.hpp"

namespace attnbench {

namespace {
int run_list() {
  std::cout << "Scorers:\n";
  for (const ScorerInfo& info : scorer_table())
    std::cout << "  " << info.name << "\n      " << info.formula << "\n      parameters: " << info.parameters
              << "\n      source: " << info.paper << "\n";
  std::cout << "Scenarios (" << scenarios_dir().string() << "):\n";
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(scenarios_dir(), error))
    if (entry.path().extension() == ".csv") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) std::cout << "  (none)\n";
  for (const std::string& name : names) std::cout << "  " << name << "\n";
  return 0;
}
}  // namespace

void setup_list(CLI::App& app, int& exit_code) {
  CLI::App* sub = app.add_subcommand("list", "List the scorers (formula, parameters, source paper) and the scenarios");
  sub->callback([&exit_code] { exit_code = run_list(); });
}

}  // namespace attnbench
