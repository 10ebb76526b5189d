// libFuzzer target: the scenario reader (load_scenario) on arbitrary file contents. Bad input
// must end in std::invalid_argument (CsvError, GridError); anything else is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "driver/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // One private folder per process, so that an include can only name this file or fail.
  static const std::filesystem::path dir = [] {
    std::filesystem::path d = std::filesystem::temp_directory_path() / ("attnbench_fuzz_scenario_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::filesystem::path file = dir / "input.csv";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  attnbench::Problem defaults;
  defaults.scorer = "all";
  try {
    attnbench::load_scenario(file, defaults);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
