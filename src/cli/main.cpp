// attnbench: benchmarks and ablates attention scoring functions in one RNN encoder-decoder.
#include <iostream>
#include <stdexcept>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"attnbench: benchmark and ablate attention scorers inside one RNN encoder-decoder", "attnbench"};
  app.set_version_flag("--version", std::string("attnbench ") + ATTNBENCH_VERSION);
  app.require_subcommand(0, 1);
  int exit_code = 0;
  attnbench::setup_list(app, exit_code);
  attnbench::setup_lesson(app, exit_code);
  attnbench::setup_probe(app, exit_code);
  attnbench::setup_grad(app, exit_code);
  std::string command_line = "attnbench";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];
  attnbench::setup_run(app, exit_code, command_line);
  attnbench::setup_train(app, exit_code, command_line);
  attnbench::setup_compare(app, exit_code);
  attnbench::setup_merge(app, exit_code);
  attnbench::setup_plot(app, exit_code);
  attnbench::setup_report(app, exit_code);
  attnbench::setup_roofline(app, exit_code);
  attnbench::setup_submit(app, exit_code, command_line);
  attnbench::setup_status(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attnbench: error: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "attnbench: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "attnbench: failed: " << e.what() << "\n";
    return 1;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "attnbench: error: a subcommand is required (see attnbench --help)\n";
    return 2;
  }
  return exit_code;
}
