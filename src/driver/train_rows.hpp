// The rows of train.csv and train_final.csv (driver/train_columns.def) for one training.
#pragma once

#include <string>
#include <vector>

#include "train/task_training.hpp"

namespace attnbench {

// Column names, in file order.
std::vector<std::string> train_key_columns();
std::vector<std::string> train_curve_header();  // key + curve values
std::vector<std::string> train_final_header();  // key + final values

// The key cells of a training, e.g. {"reverse", "additive", "onednn", "f32", "1", "64", ...}.
std::vector<std::string> train_key(const TrainSetup& setup);

// A training's settings beside its key, as meta.json's grid records them (with the key, each
// as text): steps, eval_every, eval_size, long_len.
std::vector<std::string> train_setting_columns();
std::vector<std::string> train_settings(const TrainSetup& setup);

// train.csv's rows (one per evaluation) and train_final.csv's row, as CSV text; a NaN is an empty cell.
std::string train_curve_rows(const TrainSetup& setup, const TrainOutcome& outcome);
std::string train_final_row(const TrainSetup& setup, const TrainOutcome& outcome);

// train_attention.csv: the key, then `t, j, weight, source, target`: the trained model's
// attention on held-out example 0, one row per output step t (EOS last) and source position j.
std::vector<std::string> train_attention_header();
std::string train_attention_rows(const TrainSetup& setup, const TrainOutcome& outcome);

// "%.9g", or "" for NaN.
std::string metric_cell(double value);

}  // namespace attnbench
