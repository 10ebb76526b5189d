#include "driver/merge.hpp"

#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "driver/csv_io.hpp"
#include "driver/meta_file.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_journal.hpp"
#include "driver/schema.hpp"

namespace attnbench {

namespace {

// Throws when `field` (a JSON pointer) differs between two shards' meta.json.
void require_same(const nlohmann::json& a, const nlohmann::json& b, const char* field,
                  const std::filesystem::path& first, const std::filesystem::path& other) {
  const nlohmann::json::json_pointer pointer(field);
  const nlohmann::json x = a.contains(pointer) ? a[pointer] : nlohmann::json();
  const nlohmann::json y = b.contains(pointer) ? b[pointer] : nlohmann::json();
  if (x != y)
    throw std::invalid_argument(other.string() + ": " + std::string(field).substr(1) + " is " + y.dump() + " but " +
                                first.string() + " has " + x.dump() + "; shards must come from one scenario and build");
}

// Appends the rows of `file` in every shard to one text, each key (its first
// `key_columns` cells) once.
std::string merged_rows(const std::vector<std::filesystem::path>& shards, const char* file, std::size_t key_columns) {
  std::string text;
  std::vector<std::string> header;
  std::set<std::vector<std::string>> seen;
  for (const auto& dir : shards) {
    const CsvDocument doc = read_run_csv(dir, file);
    if (header.empty()) {
      header = doc.header;
      text = csv_line(header);
    } else if (doc.header != header) {
      throw std::invalid_argument((dir / file).string() + ": header differs from the first shard's");
    }
    for (const CsvRow& row : doc.rows) {
      std::vector<std::string> key(row.cells.begin(), row.cells.begin() + static_cast<std::ptrdiff_t>(key_columns));
      if (seen.insert(key).second) text += csv_line(row.cells);
    }
  }
  return text;
}

// The shards "K/N" of 1..N not among `names`, e.g. "3/3"; empty when all are there.
std::string missing_shards(const std::set<std::string>& names) {
  const std::string& any = *names.begin();
  const int count = std::stoi(any.substr(any.find('/') + 1));
  std::string missing;
  for (int k = 1; k <= count; ++k) {
    const std::string name = std::to_string(k) + "/" + std::to_string(count);
    if (!names.contains(name)) missing += (missing.empty() ? "" : ", ") + name;
  }
  return missing;
}

}  // namespace

nlohmann::json merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out) {
  if (shards.empty()) throw std::invalid_argument("merge: give at least one run folder");
  std::vector<nlohmann::json> metas;
  for (const auto& dir : shards) metas.push_back(read_run_meta(dir));
  for (std::size_t i = 1; i < shards.size(); ++i)
    for (const char* field : {"/scenario", "/scenario_files", "/grid", "/build/git_commit", "/build/onednn_version",
                              "/build/compiler", "/build/compiler_flags"})
      require_same(metas[0], metas[i], field, shards[0], shards[i]);
  if (std::filesystem::exists(out / "timing.csv"))
    throw std::invalid_argument(out.string() + ": already holds a run; choose another --out");

  const std::string timing = merged_rows(shards, "timing.csv", schema::kTimingKey.size());
  const std::string samples = merged_rows(shards, "samples.csv", schema::kTimingKey.size() + 1);
  const std::string entropy = merged_rows(shards, "entropy.csv", schema::kEntropyKey.size());

  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) throw std::invalid_argument(out.string() + ": cannot create the output folder (" + error.message() + ")");
  nlohmann::json meta = metas[0];
  meta["merged_from"] = nlohmann::json::array();
  bool complete = true;
  std::set<std::string> shard_names;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::string shard = metas[i].value("shard", "1/1");
    meta["merged_from"].push_back({{"folder", shards[i].string()}, {"shard", shard},
                                   {"status", metas[i].value("status", "")}});
    complete = complete && metas[i].value("status", "") == "complete";
    shard_names.insert(shard);
  }
  const std::string missing = missing_shards(shard_names);
  meta["status"] = complete && missing.empty() ? "complete" : "incomplete";
  if (!missing.empty()) meta["missing_shards"] = missing;
  meta.erase("shard");
  write_file_atomically(out / "samples.csv", samples);
  write_file_atomically(out / "entropy.csv", entropy);
  write_file_atomically(out / "timing.csv", timing);
  write_journal_for(out);
  write_file_atomically(out / "meta.json", meta.dump(2) + "\n");
  return meta;
}

}  // namespace attnbench
