#include "driver/run_folder.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string_view>
#include <vector>

#include "driver/csv_io.hpp"
#include "driver/folder_lock.hpp"
#include "driver/interrupt.hpp"
#include "driver/run_journal.hpp"

namespace attnbench {

namespace {

// Each data file's header line, in data_files(kind) order.
std::vector<std::string> headers(FolderKind kind) {
  std::vector<std::string> lines;
  for (const DataFile& file : data_files(kind)) lines.push_back(csv_line(file.header));
  return lines;
}

[[noreturn]] void io_error(const std::filesystem::path& path, int error) {
  throw RunFolderIoError(path.string() + ": " + std::strerror(error));
}

// Writes all of `text` to `fd` (O_APPEND or positioned at the end); the errno on failure, else 0.
int write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

int open_or_throw(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) io_error(path, errno);
  return fd;
}

JournalRecord record_of(const std::vector<std::string>& texts, const std::vector<std::uint64_t>& before) {
  JournalRecord record;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    record.ends.push_back(before[i] + texts[i].size());
    record.sha256.push_back(sha256_hex(texts[i]));
  }
  return record;
}

// Starts the files afresh: the headers and the journal's record 0.
void write_fresh(const std::filesystem::path& dir, FolderKind kind) {
  const std::vector<std::string> texts = headers(kind), names = data_file_names(kind);
  for (std::size_t i = 0; i < texts.size(); ++i) write_file_atomically(dir / names[i], texts[i]);
  write_file_atomically(dir / kJournalName,
                        journal_head(names) + journal_line(0, record_of(texts, std::vector<std::uint64_t>(texts.size(), 0))));
}

void cut(const std::filesystem::path& path, std::uint64_t size) {
  if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) io_error(path, errno);
}

// A folder a new run may not take: it holds a run's meta.json, or an older run's files (no
// journal). A folder whose start failed before meta.json (only headers) may be taken again.
bool holds_a_run(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir / "meta.json")) return true;
  if (std::filesystem::exists(dir / kJournalName)) return false;
  for (const FolderKind kind : {FolderKind::run, FolderKind::train})
    if (std::filesystem::exists(dir / finished_rows_file(kind))) return true;
  return false;
}

// Makes the files of `dir` exactly what its journal commits, saying on stderr what was dropped.
void recover(const std::filesystem::path& dir, FolderKind kind) {
  const std::vector<std::string> names = data_file_names(kind);
  if (!std::filesystem::exists(dir / kJournalName)) {
    for (const std::string& name : names) read_csv(dir / name);  // well-formed, or file:line
    write_journal_for(dir, kind);
  }
  const CommittedState state = committed_state(dir);
  if (!state.files.empty() && state.files != names)
    throw std::invalid_argument((dir / kJournalName).string() + ":1: names " + csv_line(state.files).substr(0, 200) +
                                " but a " + (kind == FolderKind::train ? "train" : "run") +
                                " folder holds " + csv_line(names) + "; is it a folder of another kind?");
  if (!state.damage.empty())
    std::cerr << "attnbench: warning: " << state.damage << "; " << redone_from_damage(kind) << "\n";
  if (state.records == 0) {
    write_fresh(dir, kind);
    return;
  }
  const std::vector<std::string> expected = headers(kind);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::filesystem::path path = dir / names[i];
    if (state.sizes[i] > state.ends[i]) {
      if (state.damage.empty())
        std::cerr << "attnbench: " << path.string() << ": dropped " << state.sizes[i] - state.ends[i]
                  << " bytes no journal record commits (an interrupted append)\n";
      cut(path, state.ends[i]);
    }
    if (csv_line(read_csv(path).header) != expected[i])
      throw std::invalid_argument(path.string() + ":1: the header is not this attnbench's; it cannot be resumed");
  }
  cut(dir / kJournalName, state.journal_bytes);
}

}  // namespace

struct RunFolder::Files {
  std::optional<FolderLock> lock;  // declared first, so released after the files are closed
  int journal = -1;
  std::vector<int> data;
  std::vector<std::uint64_t> ends;
  std::uint64_t journal_end = 0;
  std::size_t seq = 0;

  ~Files() {
    for (int fd : data) ::close(fd);
    if (journal >= 0) ::close(journal);
  }

  // Cuts every file back to the last commit, so that no file holds part of a point.
  void roll_back() const {
    // Best effort: a cut that fails leaves a tail past the last commit, which readers
    // ignore and --resume drops.
    for (std::size_t i = 0; i < data.size(); ++i) (void)!::ftruncate(data[i], static_cast<off_t>(ends[i]));
    (void)!::ftruncate(journal, static_cast<off_t>(journal_end));
  }
};

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_error(path, errno);
  int error = write_all(fd, text);
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    io_error(path, error);
  }
}

void write_journal_for(const std::filesystem::path& dir, FolderKind kind) {
  const std::vector<std::string> names = data_file_names(kind);
  std::vector<std::string> texts;
  for (const std::string& name : names) {
    std::ifstream in(dir / name, std::ios::binary);
    texts.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  write_file_atomically(dir / kJournalName,
                        journal_head(names) + journal_line(0, record_of(texts, std::vector<std::uint64_t>(texts.size(), 0))));
}

RunFolder::RunFolder(std::filesystem::path dir, FolderKind kind, bool resume)
    : dir_(std::move(dir)), kind_(kind), files_(std::make_unique<Files>()) {
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) throw std::invalid_argument(dir_.string() + ": cannot create the output folder (" + error.message() + ")");
  if (::access(dir_.c_str(), W_OK) != 0)
    throw std::invalid_argument(dir_.string() + ": output folder is not writable (" + std::strerror(errno) + ")");
  files_->lock.emplace(dir_, FolderLock::Wait::no);
  if (resume) {
    recover(dir_, kind_);
  } else {
    if (holds_a_run(dir_))
      throw std::invalid_argument(dir_.string() + ": already holds a run; continue it with --resume " + dir_.string() +
                                  " or choose another --out");
    write_fresh(dir_, kind_);
  }
  const CommittedState state = committed_state(dir_);
  files_->ends = state.ends;
  files_->journal_end = state.journal_bytes;
  files_->seq = state.records;
  for (const std::string& name : data_file_names(kind_))
    files_->data.push_back(open_or_throw(dir_ / name, O_WRONLY | O_APPEND));
  files_->journal = open_or_throw(dir_ / kJournalName, O_WRONLY | O_APPEND);
}

RunFolder::~RunFolder() = default;
RunFolder::RunFolder(RunFolder&&) noexcept = default;
RunFolder& RunFolder::operator=(RunFolder&&) noexcept = default;

void RunFolder::append(const std::vector<std::string>& texts) {
  const WriteSection section;
  Files& f = *files_;
  const std::vector<std::string> names = data_file_names(kind_);
  if (texts.size() != names.size()) throw std::logic_error("RunFolder::append: one text per data file");
  const auto fail = [&](const std::filesystem::path& path, int error) {
    f.roll_back();
    io_error(path, error);
  };
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const int error = write_all(f.data[i], texts[i]);
    if (error == 0 && ::fdatasync(f.data[i]) == 0) continue;
    fail(dir_ / names[i], error ? error : errno);
  }
  const JournalRecord record = record_of(texts, f.ends);
  const std::string line = journal_line(f.seq, record);
  const int error = write_all(f.journal, line);
  if (error != 0 || ::fdatasync(f.journal) != 0) fail(dir_ / kJournalName, error ? error : errno);
  f.ends = record.ends;
  f.journal_end += line.size();
  ++f.seq;
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
