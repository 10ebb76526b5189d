// `attnbench train`: every training of a list into one run folder (train.csv, train_final.csv,
// train_attention.csv, journal, meta.json), crash-safe like a `run` folder (run_folder.hpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/task_training.hpp"

namespace attnbench {

struct TrainSweepOptions {
  std::vector<TrainSetup> trainings;                  // the run's (not the shard's), in order
  std::string scenario;                               // name for results/<scenario>/ and meta.json
  std::vector<std::filesystem::path> scenario_files;  // recorded with their sha256
  std::string command_line;
  std::filesystem::path out_dir;
  std::optional<nlohmann::json> resumed;  // --resume: the run's meta.json
  bool force = false, dry_run = false, quiet = false;
  int shard_index = 1, shard_count = 1;
};

// Trains every training of shard K/N that out_dir's journal does not commit, each committed
// (its train.csv, train_attention.csv and train_final.csv rows together) by one journal
// record once it ends, under the folder's lock (RunFolder, FolderKind::train); --resume
// recovers the folder first (drops a torn tail, re-trains what is not committed). With
// dry_run lists the trainings with time estimates instead. Returns 0, or kExitInterrupted
// after a signal (the training under way is dropped, those finished stay). Throws
// std::invalid_argument for what the user must fix before any training runs (including
// another writer on the folder), RunFolderIoError "FILE: OS reason" for a write the system
// refused (meta.json then records "failed").
int run_train_sweep(const TrainSweepOptions& options);

// Shard K of N of `all`: every N-th training from the K-th (K from 1).
std::vector<TrainSetup> shard_of_trainings(const std::vector<TrainSetup>& all, int index, int count);

// meta.json's "grid" of a train run: each training's key cells and its steps, eval_every,
// eval_size and long_len, as text.
nlohmann::json trainings_json(const std::vector<TrainSetup>& trainings);

// Estimated seconds of one training: its steps and evaluations, from the train_step cost model.
double training_seconds(const TrainSetup& setup);

}  // namespace attnbench
