// libFuzzer target: the run-folder reader. The input is a journal and up to three data files
// separated by "\n--8<--\n" (in the order the journal's head names them); the committed state
// must stay within the files, and the committed bytes of each file go through the CSV reader.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "driver/csv_io.hpp"
#include "driver/run_journal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kCut = "\n--8<--\n";
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const std::size_t cut = input.find(kCut, at);
    parts.push_back(input.substr(at, cut == std::string_view::npos ? std::string_view::npos : cut - at));
    if (cut == std::string_view::npos || parts.size() == 4) break;
    at = cut + kCut.size();
  }
  const std::vector<std::string_view> files(parts.begin() + 1, parts.end());
  const attnbench::CommittedState state = attnbench::committed_state_of(parts[0], files);
  if (state.ends.size() != state.files.size() || state.journal_bytes > parts[0].size())
    __builtin_trap();
  for (std::size_t i = 0; i < state.ends.size(); ++i) {
    const std::string_view file = i < files.size() ? files[i] : std::string_view();
    if (state.ends[i] > file.size()) __builtin_trap();  // never more than the file holds
    if (state.records == 0) continue;
    std::istringstream in{std::string(file.substr(0, state.ends[i]))};
    try {
      attnbench::parse_csv(state.files[i], in);
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
