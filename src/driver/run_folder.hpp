// A run folder: the data files of its kind (folder_kind.hpp: timing.csv, samples.csv,
// entropy.csv for `run`; train.csv, train_attention.csv, train_final.csv for `train`), journal
// and meta.json (results/README.md). Crash-safe by construction: a point's (or a training's)
// rows are appended to the files, then committed by one journal line (run_journal.hpp); an
// append that fails is rolled back. One writer at a time: the writer holds an exclusive flock
// on the folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/folder_kind.hpp"

namespace attnbench {

// A write the system refused (disk full, I/O error): what() is "PATH: OS reason", e.g.
// "results/x/timing.csv: No space left on device". Not the user's input: exit 1.
class RunFolderIoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RunFolder {
 public:
  // Creates `dir` (and parents), locks it, and writes the headers of `kind`'s files and the
  // journal's first record; or, with `resume`, locks it and recovers it: drops every byte the journal
  // does not commit (an interrupted append, a torn tail), and from a record the files no
  // longer match (a damaged file) on, so that the points after it are measured again.
  // Throws std::invalid_argument naming the folder when it cannot be created or written,
  // when another process writes it ("another attnbench is writing ..."), when a new run's
  // folder already holds a run, when the journal names other files than `kind`'s ("a folder
  // of another kind"), or when a file's header is not this version's ("FILE:1: ...").
  RunFolder(std::filesystem::path dir, FolderKind kind, bool resume);
  ~RunFolder();
  RunFolder(RunFolder&&) noexcept;
  RunFolder& operator=(RunFolder&&) noexcept;

  // Appends one point's rows (`texts`, one per data file in data_files(kind) order; "" adds
  // nothing) and commits them with one journal line, inside a WriteSection. On failure every
  // file is cut back to the last commit and RunFolderIoError names the file and the OS reason.
  void append(const std::vector<std::string>& texts);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  struct Files;
  std::filesystem::path dir_;
  FolderKind kind_;
  std::unique_ptr<Files> files_;
};

// Writes `text` to `path` through a temporary file, fsync and a rename (never half a file).
// Throws RunFolderIoError "PATH: OS reason" and leaves no temporary file behind.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

// Writes a journal committing the data files of `kind` in `dir` as they are (a folder made
// without one: by `merge`, or by an older attnbench).
void write_journal_for(const std::filesystem::path& dir, FolderKind kind);

// A new folder name for a run started now: results/<scenario>/<UTC timestamp>.
std::filesystem::path default_run_dir(const std::filesystem::path& results_root, const std::string& scenario);

}  // namespace attnbench
