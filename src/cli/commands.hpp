// Every subcommand: setup_x adds it to the app; its callback stores the exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace attnbench {

void setup_list(CLI::App& app, int& exit_code);
void setup_lesson(CLI::App& app, int& exit_code);
void setup_probe(CLI::App& app, int& exit_code);
void setup_grad(CLI::App& app, int& exit_code);
// `command_line` is recorded in the run's meta.json.
void setup_run(CLI::App& app, int& exit_code, const std::string& command_line);
// `command_line` is recorded in the run's meta.json.
void setup_train(CLI::App& app, int& exit_code, const std::string& command_line);
void setup_compare(CLI::App& app, int& exit_code);
void setup_merge(CLI::App& app, int& exit_code);
void setup_plot(CLI::App& app, int& exit_code);
void setup_report(CLI::App& app, int& exit_code);
void setup_roofline(CLI::App& app, int& exit_code);
// `command_line` is recorded in the submitted run's meta.json.
void setup_submit(CLI::App& app, int& exit_code, const std::string& command_line);
void setup_status(CLI::App& app, int& exit_code);

}  // namespace attnbench
