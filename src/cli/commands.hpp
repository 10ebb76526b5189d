// Every subcommand: setup_x adds it to the app; its callback stores the exit code.
#pragma once

#include <CLI/CLI.hpp>

namespace attnbench {

void setup_list(CLI::App& app, int& exit_code);
void setup_lesson(CLI::App& app, int& exit_code);
void setup_probe(CLI::App& app, int& exit_code);

}  // namespace attnbench
