// The one-writer rule of a run folder (results/README.md, "Crash safety"): every process that
// writes a run folder (run and run --resume, merge into --out, submit's meta.json updates,
// scripts/peer_torch.py through scripts/lib/run_folder.py) holds an exclusive flock on the
// folder itself while it writes. The lock goes with the process: a killed writer leaves none.
#pragma once

#include <filesystem>

namespace attnbench {

class FolderLock {
 public:
  enum class Wait { no, yes };

  // Locks the existing folder `dir`. With Wait::no a folder another process holds throws
  // std::invalid_argument "DIR: another attnbench is writing this folder; wait for it
  // to end"; with Wait::yes it waits for that process. Throws std::invalid_argument
  // "DIR: cannot open (reason)" when the folder cannot be opened.
  FolderLock(const std::filesystem::path& dir, Wait wait);
  ~FolderLock();
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace attnbench
