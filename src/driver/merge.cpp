#include "driver/merge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "driver/csv_io.hpp"
#include "driver/folder_lock.hpp"
#include "driver/meta_check.hpp"
#include "driver/meta_file.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_journal.hpp"
#include "driver/folder_kind.hpp"

namespace attnbench {

namespace {

constexpr const char* kSameBuild = "shards must come from one scenario and build";
constexpr const char* kSameMachine =
    "timings of different machines do not mix (--allow-mixed keeps them, with the host in every row)";
constexpr const char* kSameSettings =
    "timings of other fused loops or fused bf16 query do not mix (--allow-mixed keeps them, with each shard's in "
    "meta.json's merged_from)";

// Throws when `field` (a JSON pointer) differs between two shards' meta.json; `rule` ends the message.
void require_same(const nlohmann::json& a, const nlohmann::json& b, const char* field,
                  const std::filesystem::path& first, const std::filesystem::path& other, const char* rule) {
  const nlohmann::json::json_pointer pointer(field);
  const nlohmann::json x = a.contains(pointer) ? a[pointer] : nlohmann::json();
  const nlohmann::json y = b.contains(pointer) ? b[pointer] : nlohmann::json();
  if (x != y)
    throw std::invalid_argument(other.string() + ": " + std::string(field).substr(1) + " is " + y.dump() + " but " +
                                first.string() + " has " + x.dump() + "; " + rule);
}

// The "slurm" entry of an existing out/meta.json (a run from `attnbench submit`), checked
// (check_slurm_entry), or null when there is none.
nlohmann::json read_submitted(const std::filesystem::path& out) {
  std::ifstream in(out / "meta.json");
  if (!in) return nullptr;
  const nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  if (!meta.is_object() || !meta.contains("slurm")) return nullptr;
  check_slurm_entry(meta["slurm"], (out / "meta.json").string());
  return meta["slurm"];
}

// Creates `out` if needed and locks it (FolderLock): one writer at a time, then no run in it yet
// (no journal, no file of finished rows). A folder this call created is removed again when it
// cannot be taken.
FolderLock take_out_folder(const std::filesystem::path& out, FolderKind kind) {
  const bool existed = std::filesystem::exists(out);
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) throw std::invalid_argument(out.string() + ": cannot create the output folder (" + error.message() + ")");
  try {
    FolderLock lock(out, FolderLock::Wait::no);
    if (std::filesystem::exists(out / kJournalName) || std::filesystem::exists(out / finished_rows_file(kind)))
      throw std::invalid_argument(out.string() + ": already holds a run; choose another --out");
    return lock;
  } catch (...) {
    if (!existed) std::filesystem::remove(out, error);  // only while empty
    throw;
  }
}

// Appends the rows of `file` in every shard to one text, each key (its first
// `key_columns` cells) once. With `hosts` (one per shard), each row ends with its host.
std::string merged_rows(const std::vector<std::filesystem::path>& shards, const char* file, std::size_t key_columns,
                        const std::vector<std::string>& hosts) {
  std::string text;
  std::vector<std::string> header;
  std::set<std::vector<std::string>> seen;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::filesystem::path& dir = shards[i];
    const CsvDocument doc = read_run_csv(dir, file);
    if (header.empty()) {
      header = doc.header;
      std::vector<std::string> cells = header;
      if (!hosts.empty()) cells.push_back("host");
      text = csv_line(cells);
    } else if (doc.header != header) {
      throw std::invalid_argument((dir / file).string() + ": header differs from the first shard's");
    }
    for (const CsvRow& row : doc.rows) {
      std::vector<std::string> key(row.cells.begin(), row.cells.begin() + static_cast<std::ptrdiff_t>(key_columns));
      if (!seen.insert(key).second) continue;
      std::vector<std::string> cells = row.cells;
      if (!hosts.empty()) cells.push_back(hosts[i]);
      text += csv_line(cells);
    }
  }
  return text;
}

// The shards "K/N" of 1..N not among `names`, e.g. "3/3"; empty when all are there.
std::string missing_shards(const std::set<std::string>& names) {
  const std::string& any = *names.begin();
  const int count = std::stoi(any.substr(any.find('/') + 1));
  std::vector<std::string> missing;
  for (int k = 1; k <= count; ++k) {
    std::string name = fmt::format("{}/{}", k, count);
    if (!names.contains(name)) missing.push_back(std::move(name));
  }
  return fmt::format("{}", fmt::join(missing, ", "));
}

}  // namespace

nlohmann::json merge_runs(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out,
                bool allow_mixed) {
  if (shards.empty()) throw std::invalid_argument("merge: give at least one run folder");
  std::vector<nlohmann::json> metas;
  for (const auto& dir : shards) metas.push_back(read_run_meta(dir));
  for (std::size_t i = 1; i < shards.size(); ++i) {
    for (const char* field : {"/kind", "/scenario", "/scenario_files", "/grid", "/build/git_commit", "/build/compiler",
                              "/build/compiler_flags"})
      require_same(metas[0], metas[i], field, shards[0], shards[i], kSameBuild);
    if (!allow_mixed) {
      for (const char* field : {"/build/cpu_model", "/build/cpu_id", "/build/onednn_version"})
        require_same(metas[0], metas[i], field, shards[0], shards[i], kSameMachine);
      for (const char* field : {"/build/fused_loops", "/build/fused_bf16_query"})
        require_same(metas[0], metas[i], field, shards[0], shards[i], kSameSettings);
    }
  }
  const FolderKind kind = folder_kind(metas[0]);
  const std::vector<DataFile>& files = data_files(kind);
  std::vector<std::string> hosts;  // with --allow-mixed: each shard's host, for every row
  if (allow_mixed)
    for (const nlohmann::json& meta : metas)
      hosts.push_back(meta.value("/build/host"_json_pointer, std::string("unknown")));

  std::vector<std::string> texts;
  for (const DataFile& file : files) texts.push_back(merged_rows(shards, file.name.c_str(), file.key_columns, hosts));

  const FolderLock lock = take_out_folder(out, kind);  // held until the merged run is written
  const nlohmann::json submitted = read_submitted(out);
  nlohmann::json meta = metas[0];
  meta["merged_from"] = nlohmann::json::array();
  bool complete = true;
  std::set<std::string> shard_names;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::string shard = metas[i].value("shard", "1/1");
    meta["merged_from"].push_back({{"folder", shards[i].string()}, {"shard", shard},
                                   {"status", metas[i].value("status", "")},
                                   {"host", metas[i].value("/build/host"_json_pointer, std::string())},
                                   {"cpu_model", metas[i].value("/build/cpu_model"_json_pointer, std::string())},
                                   {"cpu_id", metas[i].value("/build/cpu_id"_json_pointer, std::string())},
                                   {"fused_loops", metas[i].value("/build/fused_loops"_json_pointer, std::string())},
                                   {"fused_bf16_query",
                                    metas[i].value("/build/fused_bf16_query"_json_pointer, std::string())},
                                   {"command", metas[i].value("command", std::string())}});
    complete = complete && metas[i].value("status", "") == "complete";
    shard_names.insert(shard);
  }
  const std::string missing = missing_shards(shard_names);
  meta["status"] = complete && missing.empty() ? "complete" : "incomplete";
  if (!missing.empty()) meta["missing_shards"] = missing;
  meta.erase("shard");
  meta["allow_mixed"] = allow_mixed;
  if (!submitted.is_null()) meta["slurm"] = submitted;
  for (std::size_t i = 0; i < files.size(); ++i) write_file_atomically(out / files[i].name, texts[i]);
  write_journal_for(out, kind);  // commits the merged files; meta.json last marks the run
  write_file_atomically(out / "meta.json", meta.dump(2) + "\n");
  return meta;
}

}  // namespace attnbench
