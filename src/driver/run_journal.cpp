#include "driver/run_journal.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "driver/folder_kind.hpp"

namespace attnbench {

namespace {

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool is_hex64(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The record of one journal line (its text without the newline), or false when the line
// is not whole: wrong number of words, a bad number or hash, a failed check, another seq.
bool parse_line(std::string_view line, std::size_t seq, std::size_t files, JournalRecord& record) {
  const std::size_t last_space = line.rfind(' ');
  if (last_space == std::string_view::npos) return false;
  if (line.substr(last_space + 1) != sha256_hex(line.substr(0, last_space + 1))) return false;
  std::istringstream in{std::string(line.substr(0, last_space))};
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  if (words.size() != 1 + 2 * files || words[0] != std::to_string(seq)) return false;
  record = {};
  for (std::size_t i = 0; i < files; ++i) {
    const std::string& end = words[1 + i];
    if (end.empty() || end.size() > 19 || !std::all_of(end.begin(), end.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    record.ends.push_back(std::stoull(end));
    if (!is_hex64(words[1 + files + i])) return false;
    record.sha256.push_back(words[1 + files + i]);
  }
  return true;
}

constexpr std::string_view kHeadWords = "attnbench-journal 1";
constexpr std::size_t kMaxJournalFiles = 16;

bool plain_file_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && name[0] != '.' && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                  c == '.';
         });
}

}  // namespace

std::string journal_head(const std::vector<std::string>& files) {
  std::string head(kHeadWords);
  for (const std::string& name : files) head += " " + name;
  return head + "\n";
}

std::optional<std::vector<std::string>> journal_head_files(std::string_view journal) {
  const std::size_t newline = journal.find('\n');
  if (newline == std::string_view::npos || journal.substr(0, kHeadWords.size() + 1) != std::string(kHeadWords) + " ")
    return std::nullopt;
  std::vector<std::string> files;
  std::string_view rest = journal.substr(kHeadWords.size() + 1, newline - kHeadWords.size() - 1);
  for (;;) {
    const std::size_t space = rest.find(' ');
    const std::string_view name = rest.substr(0, space);
    if (!plain_file_name(name) || std::find(files.begin(), files.end(), name) != files.end() ||
        files.size() == kMaxJournalFiles)
      return std::nullopt;
    files.emplace_back(name);
    if (space == std::string_view::npos) return files;
    rest.remove_prefix(space + 1);
  }
}

namespace {

std::size_t line_of(std::string_view text, std::uint64_t offset) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr);
  std::string hex;
  char pair[3];
  for (unsigned int i = 0; i < size; ++i) {
    std::snprintf(pair, sizeof pair, "%02x", digest[i]);
    hex += pair;
  }
  return hex;
}

std::string journal_line(std::size_t seq, const JournalRecord& record) {
  std::string line = std::to_string(seq);
  for (std::uint64_t end : record.ends) (line += ' ') += std::to_string(end);
  for (const std::string& sha : record.sha256) (line += ' ') += sha;
  line += ' ';
  const std::string check = sha256_hex(line);
  line += check;
  line += '\n';
  return line;
}

CommittedState committed_state_of(std::string_view journal, const std::vector<std::string_view>& files) {
  CommittedState state;
  state.has_journal = true;
  const std::optional<std::vector<std::string>> names = journal_head_files(journal);
  if (!names) {
    state.journal_torn = !journal.empty();
    state.damage = journal.empty() ? "" : std::string(kJournalName) + ":1: not an attnbench journal head";
    return state;
  }
  state.files = *names;
  const std::size_t count = names->size();
  state.ends.assign(count, 0);
  for (std::string_view file : files) state.sizes.push_back(file.size());
  state.sizes.resize(count, 0);
  std::uint64_t at = journal.find('\n') + 1;
  std::vector<std::uint64_t> ends(count, 0);
  for (std::size_t seq = 0;; ++seq) {
    const std::size_t newline = journal.find('\n', at);
    if (newline == std::string_view::npos) {
      state.journal_torn = at < journal.size();
      break;
    }
    JournalRecord record;
    if (!parse_line(journal.substr(at, newline - at), seq, count, record)) {
      state.journal_torn = true;
      break;
    }
    for (std::size_t i = 0; i < count; ++i) {
      const std::string_view file = i < files.size() ? files[i] : std::string_view();
      std::string why;
      if (record.ends[i] < ends[i])
        why = "the journal's record " + std::to_string(seq) + " goes backwards";
      else if (record.ends[i] > file.size())
        why = "holds " + std::to_string(file.size()) + " bytes, the journal's record " + std::to_string(seq) +
              " needs " + std::to_string(record.ends[i]);
      else if (sha256_hex(file.substr(ends[i], record.ends[i] - ends[i])) != record.sha256[i])
        why = "its bytes differ from the journal's record " + std::to_string(seq);
      if (!why.empty()) {
        state.damage = state.files[i] + ":" + std::to_string(line_of(file, std::min<std::uint64_t>(ends[i], file.size()))) +
                       ": damaged: " + why;
        return state;
      }
    }
    ends = record.ends;
    state.ends = ends;
    state.records = seq + 1;
    state.journal_bytes = newline + 1;
    at = newline + 1;
  }
  return state;
}

CommittedState committed_state(const std::filesystem::path& dir) {
  const std::filesystem::path journal = dir / kJournalName;
  if (!std::filesystem::exists(journal)) return {};
  const std::string journal_text = file_text(journal);
  std::vector<std::string> texts;
  for (const std::string& name : journal_head_files(journal_text).value_or(std::vector<std::string>{}))
    texts.push_back(file_text(dir / name));
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  CommittedState state = committed_state_of(journal_text, views);
  if (!state.damage.empty()) state.damage = (dir / state.damage).string();
  return state;
}

std::string committed_text(const std::filesystem::path& dir, std::string_view name) {
  const std::filesystem::path path = dir / name;
  const CommittedState state = committed_state(dir);
  if (!state.has_journal) {
    if (!std::filesystem::exists(path)) throw CsvError(path.string() + ": cannot open");
    return file_text(path);
  }
  if (!state.damage.empty()) {
    const FolderKind kind = kind_of_file(state.files.empty() ? name : std::string_view(state.files.front()));
    throw CsvError(state.damage + "; with `" + resume_command(kind) + "` " + redone_from_damage(kind));
  }
  const auto found = std::find(state.files.begin(), state.files.end(), name);
  if (found == state.files.end())
    throw CsvError((dir / kJournalName).string() + ":1: does not name " + std::string(name) +
                   "; is this a folder of another kind?");
  if (state.records == 0) throw CsvError(path.string() + ":1: the run never started (its journal is empty)");
  std::string text = file_text(path);
  text.resize(static_cast<std::size_t>(state.ends.at(static_cast<std::size_t>(found - state.files.begin()))));
  return text;
}

CsvDocument read_run_csv(const std::filesystem::path& dir, std::string_view name) {
  std::istringstream in(committed_text(dir, name));
  return parse_csv(dir / name, in);
}

}  // namespace attnbench
