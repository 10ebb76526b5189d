#include "driver/meta_file.hpp"

#include <fstream>
#include <stdexcept>

#include "driver/run_folder.hpp"
#include "driver/run_meta.hpp"

namespace attnbench {

nlohmann::json read_run_meta(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "meta.json";
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path.string() + ": not found; is " + dir.string() + " a run folder?");
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded()) throw std::invalid_argument(path.string() + ": not a run's meta.json (does not parse)");
  if (!meta.is_object() || !meta.contains("grid") || !meta["grid"].is_array())
    throw std::invalid_argument(path.string() + ": not a run's meta.json (no grid)");
  return meta;
}

RunMetaFile::RunMetaFile(std::filesystem::path dir, nlohmann::json start, bool resumed,
                         const std::vector<std::string>& warnings, const nlohmann::json& roofline)
    : path_(std::move(dir) / "meta.json"), doc_(std::move(start)) {
  doc_["warnings"] = warnings;
  doc_["roofline"] = roofline;
  doc_["status"] = "running";
  if (resumed) doc_["resumed_utc"].push_back(utc_now());
  write();
}

void RunMetaFile::finish(std::string_view status, std::size_t points_done, std::string_view error) {
  doc_["status"] = status;
  if (!error.empty()) doc_["error"] = error;
  doc_["end_utc"] = utc_now();
  doc_["points_done_this_session"] = points_done;
  write();
}

void RunMetaFile::write() const { write_file_atomically(path_, doc_.dump(2) + "\n"); }

}  // namespace attnbench
