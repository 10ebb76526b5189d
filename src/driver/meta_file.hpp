// A run folder's meta.json (results/README.md): the one place that reads it and the one
// that writes it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

// Reads DIR/meta.json. Throws std::invalid_argument "DIR/meta.json: not found; is DIR a run
// folder?", or "DIR/meta.json: not a run's meta.json (...)" when it does not parse or is no object,
// or check_run_meta()'s "DIR/meta.json: field 'F': ..." for a field of the wrong type or range.
nlohmann::json read_run_meta(const std::filesystem::path& dir);

// The meta.json of the run being made, kept in memory and rewritten whole (atomically)
// whenever the run's status changes.
class RunMetaFile {
 public:
  // Starts the document of `dir`: `start` (a new run's document, or with `resumed` the
  // run's as read) with status "running", this session's `warnings` and `roofline` (the
  // machine.json used, or null), and for a resumed run the time appended to resumed_utc.
  // Writes it.
  RunMetaFile(std::filesystem::path dir, nlohmann::json start, bool resumed, const std::vector<std::string>& warnings,
              const nlohmann::json& roofline);

  // Ends the session: status ("complete", "interrupted" or "failed"), end_utc, the points
  // done in this session and, when not empty, the error (its first kMaxError bytes). Writes
  // it in the room the constructor reserved (meta.json.reserve, removed first), so that a
  // full disk still gets its "failed" status and error.
  void finish(std::string_view status, std::size_t points_done, std::string_view error = "");

  // Runs `work`. When it throws (the peer failed, a full disk: the folder's files stay valid),
  // finishes with status "failed", `points_done` and the error's message, then rethrows it; a
  // RunFolderIoError naming both errors when meta.json cannot be written either.
  void fail_on_throw(const std::size_t& points_done, const std::function<void()>& work);

 private:
  static constexpr std::size_t kMaxError = 2000;
  void write() const;
  void reserve_room() const;
  std::filesystem::path reserve_path() const;

  std::filesystem::path path_;
  nlohmann::json doc_;
};

}  // namespace attnbench
