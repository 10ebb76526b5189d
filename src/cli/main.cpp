// attnbench: benchmarks and ablates attention scoring functions in one RNN encoder-decoder.
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <stdexcept>

#include "cli/commands.hpp"
#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"

namespace {

// A message as one line of reasonable length: control characters escaped, and the middle of
// a very long message (a huge cell echoed back) replaced by " ... ".
std::string one_line(std::string_view message) {
  constexpr std::size_t kMaxLength = 600, kKeep = 290;
  std::string line;
  for (char c : message) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
      line += c;
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
    line += c == '\n' ? "\\n" : escaped;
  }
  if (line.size() > kMaxLength) line = line.substr(0, kKeep) + " ... " + line.substr(line.size() - kKeep);
  return line;
}

}  // namespace

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
  for (const std::string& why : {attnbench::fused::loops_setting_error(), attnbench::fused_bf16_query_setting_error()})
    if (!why.empty()) {
      std::cerr << "attnbench: error: " << why << "\n";
      return 2;
    }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "attnbench: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "attnbench: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "attnbench: failed: " << one_line(e.what()) << "\n";
    return 1;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "attnbench: error: a subcommand is required (see attnbench --help)\n";
    return 2;
  }
  return exit_code;
}
