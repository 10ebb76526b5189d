// `attnbench merge`: joins the folders of `run --shard K/N` (or `train --shard K/N`) into one run folder.
#include <iostream>

#include <nlohmann/json.hpp>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "driver/folder_kind.hpp"
#include "driver/merge.hpp"
#include "driver/summary.hpp"

namespace attnbench {

namespace {
struct MergeOptions {
  std::vector<std::string> shards;
  std::string out;
  bool allow_mixed = false;
};

int run_merge(const MergeOptions& o) {
  const std::vector<std::filesystem::path> shards(o.shards.begin(), o.shards.end());
  const nlohmann::json meta = merge_runs(shards, o.out, o.allow_mixed);
  const bool train = folder_kind(meta) == FolderKind::train;
  if (!train) std::cout << summary_table(o.out);
  std::cout << "merged " << shards.size() << " folders into " << o.out << "\n";
  if (meta.value("status", "") != "complete")
    std::cerr << "attnbench: warning: the merged run is incomplete"
              << (meta.contains("missing_shards") ? " (missing shards: " + meta["missing_shards"].get<std::string>() + ")"
                                                   : " (a shard was interrupted)")
              << "; the missing " << (train ? "trainings can be run with `attnbench train" : "points can be run with `attnbench run")
              << " --resume " << o.out << "`\n";
  return 0;
}
}  // namespace

void setup_merge(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* sub = app.add_subcommand(
      "merge", "Join shard run folders (from `run` or `train --shard K/N`) into one; they must share scenario and build");
  sub->add_option("runs", o->shards, "Shard run folders")->required();
  sub->add_option("--out", o->out, "Folder to write the merged run to")->required();
  sub->add_flag("--allow-mixed", o->allow_mixed,
                "Join shards measured on different CPU models or oneDNN versions, or with other fused loops or bf16 query "
                "(ATTNBENCH_FUSED_LOOPS, ATTNBENCH_FUSED_BF16_QUERY); every row then names its host, meta.json's "
                "merged_from each shard's settings");
  sub->callback([o, &exit_code] { exit_code = run_merge(*o); });
}

}  // namespace attnbench
