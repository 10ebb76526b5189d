// A run folder's journal (results/README.md, "Crash safety"): the commit record of each
// point. A point's rows are appended to the CSVs first, then one journal line records every
// file's new length and the sha256 of the bytes added; the point exists once that line is
// whole. Bytes past the last whole line are an uncommitted tail: readers ignore it and
// --resume drops it. A file that no longer holds what a line records is damaged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "driver/csv_io.hpp"

namespace attnbench {

// The journal's file name in a run folder.
inline constexpr std::string_view kJournalName = "journal";

// The run folder's data files, in the journal's order: timing.csv, samples.csv, entropy.csv.
const std::vector<std::string>& journal_files();

// The first line of every journal: "attnbench-journal 1 timing.csv samples.csv entropy.csv\n".
std::string journal_head();

// One commit: each file's length after it and the sha256 (hex) of the bytes it added.
struct JournalRecord {
  std::vector<std::uint64_t> ends;
  std::vector<std::string> sha256;
};

// The line of record number `seq` (0: the headers): "SEQ END... SHA... CHECK\n", CHECK the
// sha256 of the text before it.
std::string journal_line(std::size_t seq, const JournalRecord& record);

// The sha256 of `bytes` as lower-case hex.
std::string sha256_hex(std::string_view bytes);

// What a folder's files hold for sure.
struct CommittedState {
  bool has_journal = false;          // false: an older or merged folder, every byte counts
  std::size_t records = 0;           // journal records the files match (0: not even the headers)
  std::vector<std::uint64_t> ends;   // each file's committed length (0 when records == 0)
  std::uint64_t journal_bytes = 0;   // length of the journal text those records take
  std::vector<std::uint64_t> sizes;  // each file's actual length
  std::string damage;                // "" or "timing.csv:LINE: why" for the first record that does not hold
  bool journal_torn = false;         // the journal ends in a line that is not whole
};

// The committed state of journal text and the files' contents (in journal_files() order).
CommittedState committed_state_of(std::string_view journal, const std::vector<std::string_view>& files);

// The committed state of the run folder `dir` (has_journal false when it has no journal).
// Throws CsvError "DIR/journal:1: ..." for a journal of another kind.
CommittedState committed_state(const std::filesystem::path& dir);

// Reads the committed rows of `name` (one of journal_files()) in run folder `dir`. Throws
// CsvError "DIR/name:LINE: reason" when the file is damaged (holds less than, or other
// bytes than, the journal records) or is not well-formed CSV.
CsvDocument read_run_csv(const std::filesystem::path& dir, std::string_view name);

}  // namespace attnbench
