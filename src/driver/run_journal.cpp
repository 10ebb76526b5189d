#include "driver/run_journal.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

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
bool parse_line(std::string_view line, std::size_t seq, JournalRecord& record) {
  const std::size_t files = journal_files().size();
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

std::size_t line_of(std::string_view text, std::uint64_t offset) {
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

}  // namespace

const std::vector<std::string>& journal_files() {
  static const std::vector<std::string> names = {"timing.csv", "samples.csv", "entropy.csv"};
  return names;
}

std::string journal_head() {
  std::string head = "attnbench-journal 1";
  for (const std::string& name : journal_files()) head += " " + name;
  return head + "\n";
}

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
  const std::size_t count = journal_files().size();
  CommittedState state;
  state.has_journal = true;
  state.ends.assign(count, 0);
  for (std::string_view file : files) state.sizes.push_back(file.size());
  state.sizes.resize(count, 0);
  const std::string head = journal_head();
  if (journal.substr(0, head.size()) != head) {
    state.journal_torn = !journal.empty();
    state.damage = journal.empty() ? "" : std::string(kJournalName) + ":1: not an attnbench journal head";
    return state;
  }
  std::uint64_t at = head.size();
  std::vector<std::uint64_t> ends(count, 0);
  for (std::size_t seq = 0;; ++seq) {
    const std::size_t newline = journal.find('\n', at);
    if (newline == std::string_view::npos) {
      state.journal_torn = at < journal.size();
      break;
    }
    JournalRecord record;
    if (!parse_line(journal.substr(at, newline - at), seq, record)) {
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
        state.damage = journal_files()[i] + ":" + std::to_string(line_of(file, std::min<std::uint64_t>(ends[i], file.size()))) +
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
  if (!std::filesystem::exists(journal)) {
    CommittedState state;
    for (const std::string& name : journal_files()) {
      std::error_code error;
      const auto size = std::filesystem::file_size(dir / name, error);
      state.sizes.push_back(error ? 0 : size);
    }
    state.ends = state.sizes;
    return state;
  }
  std::vector<std::string> texts;
  for (const std::string& name : journal_files()) texts.push_back(file_text(dir / name));
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  CommittedState state = committed_state_of(file_text(journal), views);
  if (!state.damage.empty()) state.damage = (dir / state.damage).string();
  return state;
}

CsvDocument read_run_csv(const std::filesystem::path& dir, std::string_view name) {
  const std::filesystem::path path = dir / name;
  const CommittedState state = committed_state(dir);
  if (!state.has_journal) return read_csv(path);
  if (!state.damage.empty()) throw CsvError(state.damage + "; --resume re-measures the points from there");
  if (state.records == 0) throw CsvError(path.string() + ":1: the run never started (its journal is empty)");
  const std::size_t index = static_cast<std::size_t>(
      std::find(journal_files().begin(), journal_files().end(), name) - journal_files().begin());
  std::string text = file_text(path);
  text.resize(static_cast<std::size_t>(state.ends.at(index)));
  std::istringstream in(text);
  return parse_csv(path, in);
}

}  // namespace attnbench
