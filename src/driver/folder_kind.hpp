// The kinds of run folder (meta.json's "kind": absent for `attnbench run`, "train" for
// `attnbench train`) and the data files each holds: the one list that the journal's writer
// (RunFolder), --resume, merge and status read. Both kinds are crash-safe the same way
// (run_journal.hpp): the journal's head names the kind's files in this order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

enum class FolderKind { run, train };

struct DataFile {
  std::string name;                 // e.g. "timing.csv"
  std::vector<std::string> header;  // its first line's cells
  std::size_t key_columns;          // leading cells that key a row: merge keeps each key once
};

// The data files of a folder of `kind`, in the journal's order: run: timing.csv, samples.csv,
// entropy.csv; train: train.csv, train_attention.csv, train_final.csv.
const std::vector<DataFile>& data_files(FolderKind kind);

// Their names, in the same order.
std::vector<std::string> data_file_names(FolderKind kind);

// The file whose rows count a folder's finished points: timing.csv, or train_final.csv (one
// row per training).
std::string finished_rows_file(FolderKind kind);

// The kind meta.json records: "train" is FolderKind::train, anything else (no "kind") a run.
FolderKind folder_kind(const nlohmann::json& meta);

}  // namespace attnbench
