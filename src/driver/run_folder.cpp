#include "driver/run_folder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "driver/csv_io.hpp"
#include "driver/interrupt.hpp"
#include "driver/schema.hpp"

namespace attnbench {

namespace {

template <std::size_t N, std::size_t M>
std::string header(const std::array<std::string_view, N>& key, const std::array<std::string_view, M>& values) {
  std::vector<std::string> cells(key.begin(), key.end());
  cells.insert(cells.end(), values.begin(), values.end());
  return csv_line(cells);
}

struct CsvFile {
  const char* name;
  std::string header;
};

std::vector<CsvFile> csv_files() {
  return {{"timing.csv", header(schema::kTimingKey, schema::kTimingValues)},
          {"samples.csv", header(schema::kTimingKey, schema::kSampleValues)},
          {"entropy.csv", header(schema::kEntropyKey, schema::kEntropyValues)}};
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::invalid_argument(path.string() + ": " + what + " (" + std::strerror(errno) + ")");
}

// Appends all of `text` with write(2) on an O_APPEND descriptor, then fsync.
void append_whole(const std::filesystem::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open for appending");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      fail(path, "cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) fail(temporary, "cannot write");
  }
  std::filesystem::rename(temporary, path);
}

RunFolder::RunFolder(std::filesystem::path dir, bool resume) : dir_(std::move(dir)) {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) throw std::invalid_argument(dir_.string() + ": cannot create the output folder (" + error.message() + ")");
  if (::access(dir_.c_str(), W_OK) != 0) fail(dir_, "output folder is not writable");
  if (!resume && std::filesystem::exists(dir_ / "timing.csv"))
    throw std::invalid_argument(dir_.string() + ": already holds a run; continue it with --resume " + dir_.string() +
                                " or choose another --out");
  for (const CsvFile& file : csv_files()) {
    const std::filesystem::path path = dir_ / file.name;
    if (resume && std::filesystem::exists(path)) {
      if (::access(path.c_str(), W_OK) != 0) fail(path, "not writable");
      continue;
    }
    std::ofstream out(path, std::ios::trunc);
    out << file.header;
    out.flush();
    if (!out) fail(path, "cannot write");
  }
}

void RunFolder::append(const std::string& timing, const std::string& samples, const std::string& entropy) {
  const WriteSection section;
  append_whole(dir_ / "samples.csv", samples);
  append_whole(dir_ / "entropy.csv", entropy);
  append_whole(dir_ / "timing.csv", timing);  // last: a point counts as done once its timing rows exist
}

std::filesystem::path default_run_dir(const std::filesystem::path& results_root, const std::string& scenario) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  return results_root / scenario / stamp;
}

}  // namespace attnbench
