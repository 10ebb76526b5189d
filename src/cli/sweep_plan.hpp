// The sweeps `attnbench submit` can shard: each subcommand that sweeps a grid with
// --shard K/N, --out and --resume plans its own flags here. A new sweep (e.g. `train`)
// is one planner and one line in sweep_commands().
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "driver/slurm_plan.hpp"

namespace attnbench {

// What submit needs to know of a sweep before it runs anywhere.
struct SweepPlan {
  std::string scenario;             // names the default folder results/<scenario>/<UTC time>
  nlohmann::json grid;              // the whole grid, as meta.json records it
  std::size_t points = 0;
  std::vector<ShardNeeds> shards;   // shards 1..N
};

// Plans `attnbench <command> ARGS` split in `shards` shards; throws std::invalid_argument
// (or CLI::ParseError) naming the flag when ARGS are bad, exactly as the command would.
using SweepPlanner = SweepPlan (*)(const std::vector<std::string>& args, int shards);

struct SweepCommand {
  std::string_view name;  // the subcommand, e.g. "run"
  SweepPlanner plan;
};

// Every sweep submit knows, in the order --help lists them.
const std::vector<SweepCommand>& sweep_commands();

// "K/N" of --shard (or meta.json's "shard") as {K, N}; throws std::invalid_argument naming
// --shard unless 1 <= K <= N.
std::pair<int, int> parse_shard(const std::string& text);

// The options of `attnbench <name> ARGS`, parsed by an app that add_options(app, options)
// fills; throws CLI::ParseError for a bad flag, as the command would.
template <typename Options, typename AddOptions>
std::shared_ptr<Options> parse_sweep_flags(const std::string& name, const std::vector<std::string>& args,
                                           AddOptions add_options) {
  auto options = std::make_shared<Options>();
  CLI::App app{"attnbench " + name, "attnbench " + name};
  add_options(&app, options);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a vector back to front
  app.parse(reversed);
  return options;
}

// `attnbench run`'s planner (run_command.cpp).
SweepPlan plan_run_sweep(const std::vector<std::string>& args, int shards);

// `attnbench train`'s planner (train_command.cpp).
SweepPlan plan_train_sweep(const std::vector<std::string>& args, int shards);

}  // namespace attnbench
