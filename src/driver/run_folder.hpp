// A run's output folder: timing.csv, samples.csv, entropy.csv (appended point by
// point, each point's rows written whole and flushed) and meta.json.
#pragma once

#include <filesystem>
#include <string>

namespace attnbench {

class RunFolder {
 public:
  // Creates `dir` (and parents) and the CSVs with their headers, or, with
  // `resume`, opens the existing ones for appending. Throws std::invalid_argument
  // naming the folder when it cannot be created or written, before any work.
  RunFolder(std::filesystem::path dir, bool resume);

  // Appends one point's rows to the three files inside a WriteSection: a signal that
  // abandons the run waits until all three are on disk, so no file holds half a point.
  void append(const std::string& timing, const std::string& samples, const std::string& entropy);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// Writes `text` to `path` through a temporary file and a rename (never half a file).
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

// A new folder name for a run started now: results/<scenario>/<UTC timestamp>.
std::filesystem::path default_run_dir(const std::filesystem::path& results_root, const std::string& scenario);

}  // namespace attnbench
