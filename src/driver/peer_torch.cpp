#include "driver/peer_torch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "driver/csv_io.hpp"
#include "driver/grid.hpp"
#include "driver/result_rows.hpp"
#include "driver/schema.hpp"

namespace attnbench {

namespace {

constexpr std::size_t kImplColumn =
    static_cast<std::size_t>(std::find(schema::kTimingKey.begin(), schema::kTimingKey.end(), "impl") -
                             schema::kTimingKey.begin());
constexpr std::size_t kStatusColumn =
    schema::kTimingKey.size() +
    static_cast<std::size_t>(std::find(schema::kTimingValues.begin(), schema::kTimingValues.end(), "status") -
                             schema::kTimingValues.begin());
static_assert(kImplColumn < schema::kTimingKey.size(), "timing key has an impl column");

// The peer's command line; throws "--peer torch: ..." when a part of it is missing.
std::vector<std::string> serve_argv(const PeerCommand& command) {
  if (::access(command.python.c_str(), X_OK) != 0)
    throw std::invalid_argument("--peer torch: the interpreter " + command.python.string() +
                                " is missing or not executable (Debian: apt-get install python3-torch)");
  if (!std::filesystem::is_regular_file(command.script))
    throw std::invalid_argument("--peer torch: " + command.script.string() + " not found");
  // The peer reads the lists (stages, columns) of this very binary (scripts/attnbench_lists.py).
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) ::setenv("ATTNBENCH_BINARY", self.c_str(), 1);
  return {command.python.string(), command.script.string(), "--serve"};
}

std::string joined(const std::vector<std::string>& items, const char* separator) {
  return fmt::format("{}", fmt::join(items, separator));
}

// Rows of one answer ("timing" or "samples") as cells, each `width` wide.
std::vector<std::vector<std::string>> rows_of(const nlohmann::json& answer, const char* file, std::size_t width) {
  std::vector<std::vector<std::string>> rows;
  try {
    rows = answer.at(file).get<std::vector<std::vector<std::string>>>();
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(std::string("the answer has no list of ") + file + " rows");
  }
  for (const auto& row : rows)
    if (row.size() != width)
      throw std::runtime_error(std::string("a ") + file + " row has " + std::to_string(row.size()) + " cells, not " +
                               std::to_string(width));
  return rows;
}

std::vector<std::string> key_of(const std::vector<std::string>& row) {
  return {row.begin(), row.begin() + static_cast<std::ptrdiff_t>(schema::kTimingKey.size())};
}

// Checks an answer against what was asked and turns it into CSV text.
PeerRows checked_rows(const nlohmann::json& answer, const Problem& p, const std::vector<std::string>& scorers,
                      const BenchSettings& bench) {
  const auto timing = rows_of(answer, "timing", schema::kTimingKey.size() + schema::kTimingValues.size());
  const auto samples = rows_of(answer, "samples", schema::kTimingKey.size() + schema::kSampleValues.size());
  std::vector<std::vector<std::string>> expected;
  for (const std::string& scorer : scorers) {
    Problem q = p;
    q.scorer = scorer;
    for (const std::string& stage : bench.stages) expected.push_back(peer_timing_key(q, stage));
  }
  if (timing.size() != expected.size())
    throw std::runtime_error(std::to_string(timing.size()) + " timing rows, expected " +
                             std::to_string(expected.size()) + " (scorers x stages)");
  PeerRows rows;
  std::map<std::vector<std::string>, int> samples_wanted;  // ok timing key -> repetitions still expected
  for (std::size_t i = 0; i < timing.size(); ++i) {
    if (key_of(timing[i]) != expected[i])
      throw std::runtime_error("timing row " + std::to_string(i + 1) + " has key " + joined(key_of(timing[i]), ",") +
                               ", expected " + joined(expected[i], ","));
    if (timing[i][kStatusColumn] == "ok") samples_wanted[expected[i]] = bench.repetitions;
    rows.timing += csv_line(timing[i]);
  }
  for (const auto& row : samples) {
    const auto wanted = samples_wanted.find(key_of(row));
    if (wanted == samples_wanted.end() || wanted->second-- <= 0)
      throw std::runtime_error("unexpected samples row " + joined(key_of(row), ","));
    rows.samples += csv_line(row);
  }
  for (const auto& [key, missing] : samples_wanted)
    if (missing != 0) throw std::runtime_error("samples rows missing for " + joined(key, ","));
  return rows;
}

}  // namespace

std::vector<std::string> peer_timing_key(const Problem& p, std::string_view stage) {
  std::vector<std::string> key = timing_key(p, stage);
  key[kImplColumn] = kPeerImpl;
  return key;
}

TorchPeer::TorchPeer(const PeerCommand& command)
    : command_line_(command.python.string() + " " + command.script.string() + " --serve"),
      process_(serve_argv(command)) {
  nlohmann::json hello;
  try {
    hello = process_.receive();
  } catch (const std::runtime_error& error) {
    throw std::invalid_argument("--peer torch: `" + command_line_ + "` did not start: " + error.what());
  }
  if (!hello.is_object() || hello.value("peer", "") != kPeerImpl || !hello.contains("torch_version"))
    throw std::invalid_argument("--peer torch: `" + command_line_ + "` did not greet as the torch peer: " +
                                hello.dump().substr(0, 200));
  description_ = {{"name", kPeerImpl},
                  {"torch_version", hello["torch_version"]},
                  {"python_version", hello.value("python_version", "")},
                  {"blas", hello.contains("blas") ? hello["blas"] : nlohmann::json::array()},
                  {"command", command_line_}};
  if (hello.contains("warning") && hello["warning"].is_string()) warning_ = hello["warning"].get<std::string>();
}

PeerRows TorchPeer::measure(const Problem& p, const std::vector<std::string>& scorers, const BenchSettings& bench,
                            const std::string& skip_status) {
  Problem named = p;
  named.scorer = joined(scorers, ",");
  const std::string where = "--peer torch at " + repro_flags(named);
  nlohmann::json point = nlohmann::json::object();
  for (const auto& [field, value] : field_values(p))
    if (field != "scorer" && field != "impl") point[field] = value;
  const nlohmann::json request = {{"point", point},
                                  {"scorers", scorers},
                                  {"stages", bench.stages},
                                  {"repetitions", bench.repetitions},
                                  {"min_time", bench.min_time},
                                  {"skip", skip_status.empty() ? nlohmann::json(nullptr) : nlohmann::json(skip_status)}};
  try {
    process_.send(request);
    const nlohmann::json answer = process_.receive();
    if (answer.contains("error"))
      throw std::runtime_error(answer["error"].is_string() ? answer["error"].get<std::string>() : answer["error"].dump());
    return checked_rows(answer, p, scorers, bench);
  } catch (const std::runtime_error& error) {
    throw std::runtime_error(where + ": " + error.what());
  }
}

}  // namespace attnbench
