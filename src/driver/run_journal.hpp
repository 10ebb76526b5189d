// A run folder's journal (results/README.md, "Crash safety"): the commit record of each
// point (a `run` point, or a `train` training). The head line names the folder's data files
// (folder_kind.hpp: one list per kind); readers take the names from it. A point's rows are
// appended to the files first, then one journal line records every file's new length and the
// sha256 of the bytes added; the point exists once that line is whole. Bytes past the last
// whole line are an uncommitted tail: readers ignore it and --resume drops it. A file that no
// longer holds what a line records is damaged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/csv_io.hpp"

namespace attnbench {

// The journal's file name in a run folder.
inline constexpr std::string_view kJournalName = "journal";

// The first line of a journal over `files` (in that order), e.g. for a run folder
// "attnbench-journal 1 timing.csv samples.csv entropy.csv\n".
std::string journal_head(const std::vector<std::string>& files);

// The files the head line of `journal` names, or nullopt when the text does not start with a
// whole head line (1 to 16 distinct plain file names: letters, digits, '_', '-', '.', not
// starting with '.').
std::optional<std::vector<std::string>> journal_head_files(std::string_view journal);

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
  bool has_journal = false;          // false: an older folder, every byte counts (files is empty)
  std::vector<std::string> files;    // the data files the journal's head names; the vectors below follow it
  std::size_t records = 0;           // journal records the files match (0: not even the headers)
  std::vector<std::uint64_t> ends;   // each file's committed length (0 when records == 0)
  std::uint64_t journal_bytes = 0;   // length of the journal text those records take
  std::vector<std::uint64_t> sizes;  // each file's actual length
  std::string damage;                // "" or "timing.csv:LINE: why" for the first record that does not hold
  bool journal_torn = false;         // the journal ends in a line that is not whole
};

// The committed state of journal text and the files' contents (in the order its head names
// them). A journal without a valid head commits nothing: damage "journal:1: ...".
CommittedState committed_state_of(std::string_view journal, const std::vector<std::string_view>& files);

// The committed state of the run folder `dir`, its files named by its journal's head
// (has_journal false when it has no journal).
CommittedState committed_state(const std::filesystem::path& dir);

// The committed bytes of data file `name` in run folder `dir` (all of it when the folder has
// no journal). Throws CsvError "DIR/name:LINE: reason" when the file is damaged (holds less
// than, or other bytes than, the journal records; the message ends with what the resume
// command of the folder's kind does from there, folder_kind.hpp), "DIR/journal:1: ..." when
// the journal's head is not whole or does not name `name`, or when the run never started.
std::string committed_text(const std::filesystem::path& dir, std::string_view name);

// Reads the committed rows of `name` in run folder `dir` (committed_text): CsvError
// "DIR/name:LINE: reason" as there, or when they are not well-formed CSV.
CsvDocument read_run_csv(const std::filesystem::path& dir, std::string_view name);

}  // namespace attnbench
