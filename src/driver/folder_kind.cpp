#include "driver/folder_kind.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "driver/schema.hpp"
#include "driver/train_rows.hpp"

namespace attnbench {

namespace {

template <std::size_t N, std::size_t M>
std::vector<std::string> cells(const std::array<std::string_view, N>& key, const std::array<std::string_view, M>& values) {
  std::vector<std::string> out(key.begin(), key.end());
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

}  // namespace

const std::vector<DataFile>& data_files(FolderKind kind) {
  static const std::vector<DataFile> run = {
      {"timing.csv", cells(schema::kTimingKey, schema::kTimingValues), schema::kTimingKey.size()},
      {"samples.csv", cells(schema::kTimingKey, schema::kSampleValues), schema::kTimingKey.size() + 1},  // + repetition
      {"entropy.csv", cells(schema::kEntropyKey, schema::kEntropyValues), schema::kEntropyKey.size()}};
  static const std::vector<DataFile> train = {
      {"train.csv", train_curve_header(), train_key_columns().size() + 1},                // + step
      {"train_attention.csv", train_attention_header(), train_key_columns().size() + 2},  // + t, j
      {"train_final.csv", train_final_header(), train_key_columns().size()}};
  return kind == FolderKind::train ? train : run;
}

std::vector<std::string> data_file_names(FolderKind kind) {
  std::vector<std::string> names;
  for (const DataFile& file : data_files(kind)) names.push_back(file.name);
  return names;
}

std::string finished_rows_file(FolderKind kind) { return kind == FolderKind::train ? "train_final.csv" : "timing.csv"; }

FolderKind folder_kind(const nlohmann::json& meta) {
  return meta.is_object() && meta.contains("kind") && meta["kind"] == "train" ? FolderKind::train : FolderKind::run;
}

FolderKind kind_of_file(std::string_view file) {
  const std::vector<DataFile>& train = data_files(FolderKind::train);
  const bool in_train = std::any_of(train.begin(), train.end(), [&](const DataFile& f) { return f.name == file; });
  return in_train ? FolderKind::train : FolderKind::run;
}

std::string resume_command(FolderKind kind) {
  return kind == FolderKind::train ? "attnbench train --resume" : "attnbench run --resume";
}

std::string redone_from_damage(FolderKind kind) {
  return kind == FolderKind::train ? "the trainings from there are trained again"
                                   : "the points from there are measured again";
}

}  // namespace attnbench
