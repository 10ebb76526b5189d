// Where the project's data folders are: next to the sources, or $ATTNBENCH_HOME.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace attnbench {

// The project root: $ATTNBENCH_HOME when set, else the source tree this binary was built from.
inline std::filesystem::path project_root() {
  if (const char* home = std::getenv("ATTNBENCH_HOME")) return home;
  return ATTNBENCH_SOURCE_DIR;
}

inline std::filesystem::path scenarios_dir() { return project_root() / "scenarios"; }

}  // namespace attnbench
