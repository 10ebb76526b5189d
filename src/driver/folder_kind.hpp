// The kinds of run folder (meta.json's "kind": absent for `attnbench run`, "train" for
// `attnbench train`) and the data files each holds: the one list that the journal's writer
// (RunFolder), --resume, merge and status read. Both kinds are crash-safe the same way
// (run_journal.hpp): the journal's head names the kind's files in this order.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
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

// The kind one of whose data files is `file` ("train_final.csv": train); a run for any other
// name, as folder_kind(meta) without a "kind".
FolderKind kind_of_file(std::string_view file);

// The command that continues an interrupted folder of `kind`: "attnbench run --resume" or
// "attnbench train --resume" (the folder follows).
std::string resume_command(FolderKind kind);

// What that command does from a damaged record on, for messages: "the points from there are
// measured again" (run) or "the trainings from there are trained again" (train).
std::string redone_from_damage(FolderKind kind);

}  // namespace attnbench
