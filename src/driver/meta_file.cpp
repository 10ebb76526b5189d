#include "driver/meta_file.hpp"

#include <fstream>
#include <stdexcept>

#include "driver/meta_check.hpp"
#include "driver/run_folder.hpp"
#include "driver/run_meta.hpp"

namespace attnbench {

nlohmann::json read_run_meta(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / "meta.json";
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path.string() + ": not found; is " + dir.string() + " a run folder?");
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded()) throw std::invalid_argument(path.string() + ": not a run's meta.json (does not parse)");
  if (!meta.is_object()) throw std::invalid_argument(path.string() + ": not a run's meta.json (not an object)");
  check_run_meta(meta, path.string());
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
  reserve_room();
}

void RunMetaFile::reserve_room() const {
  // Room for the last rewrite: the document, its end fields and an error message of up to kMaxError.
  const std::string zeros(doc_.dump(2).size() + kMaxError + 4096, '\0');
  try {
    write_file_atomically(reserve_path(), zeros);
  } catch (const RunFolderIoError&) {  // no room even now: the run's first append will say so
  }
}

std::filesystem::path RunMetaFile::reserve_path() const { return path_.string() + ".reserve"; }

void RunMetaFile::finish(std::string_view status, std::size_t points_done, std::string_view error) {
  doc_["status"] = status;
  if (!error.empty()) doc_["error"] = error.substr(0, kMaxError);
  std::error_code ignored;
  std::filesystem::remove(reserve_path(), ignored);  // frees the room reserved for this write
  doc_["end_utc"] = utc_now();
  doc_["points_done_this_session"] = points_done;
  write();
}

void RunMetaFile::fail_on_throw(const std::size_t& points_done, const std::function<void()>& work) {
  try {
    work();
  } catch (const std::exception& error) {
    try {
      finish("failed", points_done, error.what());
    } catch (const std::exception& also) {  // the disk may still be full: the first error is the news
      throw RunFolderIoError(std::string(error.what()) + " (and meta.json could not record it: " + also.what() + ")");
    }
    throw;
  }
}

void RunMetaFile::write() const { write_file_atomically(path_, doc_.dump(2) + "\n"); }

}  // namespace attnbench
