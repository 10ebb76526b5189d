// The journal's committed state: whole lines commit, a torn line or tail does not, a file
// that lost committed bytes is damaged from the first record it no longer matches.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/folder_kind.hpp"
#include "driver/run_journal.hpp"

namespace attnbench {
namespace {

const std::vector<std::string> kRunFiles = data_file_names(FolderKind::run);

struct Folder {
  std::vector<std::string> files = {"t\n", "s\n", "e\n"};
  std::string journal = journal_head(kRunFiles);
  std::size_t seq = 0;

  void commit(const std::vector<std::string>& added) {
    JournalRecord record;
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (seq > 0) files[i] += added[i];
      record.ends.push_back(files[i].size());
      record.sha256.push_back(sha256_hex(seq > 0 ? added[i] : files[i]));
    }
    journal += journal_line(seq++, record);
  }
  CommittedState state() const { return committed_state_of(journal, {files[0], files[1], files[2]}); }
};

Folder three_points() {
  Folder f;
  f.commit({});
  f.commit({"a,1\n", "a,1,x\n", "a\n"});
  f.commit({"b,2\n", "b,2,y\n", ""});
  return f;
}

TEST(Journal, WholeLinesCommit) {
  const Folder f = three_points();
  const CommittedState s = f.state();
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(s.ends, (std::vector<std::uint64_t>{f.files[0].size(), f.files[1].size(), f.files[2].size()}));
  EXPECT_EQ(s.journal_bytes, f.journal.size());
  EXPECT_TRUE(s.damage.empty());
  EXPECT_FALSE(s.journal_torn);
}

TEST(Journal, AnUncommittedTailIsIgnored) {
  Folder f = three_points();
  const std::uint64_t committed = f.files[0].size();
  f.files[0] += "c,3";  // a crash mid-append
  const CommittedState s = f.state();
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(s.ends[0], committed);
  EXPECT_TRUE(s.damage.empty());
}

TEST(Journal, EveryTruncationOfTheJournalKeepsTheWholeLinesBeforeIt) {
  const Folder f = three_points();
  std::size_t line_ends[3];
  std::size_t at = journal_head(kRunFiles).size();
  for (std::size_t& end : line_ends) end = at = f.journal.find('\n', at) + 1;
  for (std::size_t size = 0; size < f.journal.size(); ++size) {
    Folder cut = f;
    cut.journal.resize(size);
    const CommittedState s = cut.state();
    std::size_t whole = 0;
    for (std::size_t end : line_ends) whole += end <= size;
    EXPECT_EQ(s.records, whole) << size;
    EXPECT_TRUE(s.damage.empty() || size < journal_head(kRunFiles).size()) << size << ": " << s.damage;
  }
}

TEST(Journal, EveryTruncationOfADataFileIsDamageAtTheFirstRecordItNoLongerHolds) {
  const Folder f = three_points();
  for (std::size_t file = 0; file < 3; ++file)
    for (std::size_t size = 0; size < f.files[file].size(); ++size) {
      Folder cut = f;
      cut.files[file].resize(size);
      const CommittedState s = cut.state();
      EXPECT_FALSE(s.damage.empty()) << file << " " << size;
      EXPECT_LT(s.records, 3u);
      for (std::size_t i = 0; i < 3; ++i) EXPECT_LE(s.ends[i], cut.files[i].size());
      EXPECT_NE(s.damage.find(kRunFiles[file] + ":"), std::string::npos) << s.damage;
    }
}

TEST(Journal, ChangedBytesAreDamage) {
  Folder f = three_points();
  f.files[1][4] = 'X';  // inside point 1's samples row
  const CommittedState s = f.state();
  EXPECT_EQ(s.records, 1u);
  EXPECT_EQ(s.damage, "samples.csv:2: damaged: its bytes differ from the journal's record 1");
}

TEST(Journal, AFlippedCheckTearsTheLine) {
  Folder f = three_points();
  f.journal[f.journal.size() - 3] ^= 1;  // the last line's check
  const CommittedState s = f.state();
  EXPECT_EQ(s.records, 2u);
  EXPECT_TRUE(s.journal_torn);
}

TEST(Journal, TheHeadNamesTheFilesOfEachKind) {
  EXPECT_EQ(journal_head(kRunFiles), "attnbench-journal 1 timing.csv samples.csv entropy.csv\n");
  EXPECT_EQ(journal_head(data_file_names(FolderKind::train)),
            "attnbench-journal 1 train.csv train_attention.csv train_final.csv\n");
  EXPECT_EQ(journal_head_files(journal_head(data_file_names(FolderKind::train))), data_file_names(FolderKind::train));
  EXPECT_EQ(journal_head_files("attnbench-journal 1 a.csv\n0 "), (std::vector<std::string>{"a.csv"}));
  for (const char* bad : {"", "attnbench-journal 1 a.csv", "attnbench-journal 1 \n", "attnbench-journal 2 a.csv\n",
                          "attnbench-journal 1 ../x\n", "attnbench-journal 1 .x\n", "attnbench-journal 1 a a\n",
                          "attnbench-journal 1 a  b\n"})
    EXPECT_EQ(journal_head_files(bad), std::nullopt) << bad;
}

TEST(Journal, ATrainJournalCommitsItsOwnFiles) {
  // Two trainings committed over train.csv, train_attention.csv, train_final.csv; a third torn.
  const std::vector<std::string> names = data_file_names(FolderKind::train);
  std::vector<std::string> files = {"k,step\n", "k,t,j\n", "k,status\n"};
  std::string journal = journal_head(names);
  const auto commit = [&](std::size_t seq, const std::vector<std::string>& added) {
    JournalRecord record;
    for (std::size_t i = 0; i < 3; ++i) {
      if (seq > 0) files[i] += added[i];
      record.ends.push_back(files[i].size());
      record.sha256.push_back(sha256_hex(seq > 0 ? added[i] : files[i]));
    }
    journal += journal_line(seq, record);
  };
  commit(0, {});
  commit(1, {"a,10\na,20\n", "a,0,0\na,0,1\n", "a,ok\n"});
  commit(2, {"b,10\nb,20\n", "b,0,0\nb,0,1\n", "b,ok\n"});
  const std::vector<std::uint64_t> committed = {files[0].size(), files[1].size(), files[2].size()};
  files[0] += "c,10\n";  // killed before the journal line
  const CommittedState s = committed_state_of(journal, {files[0], files[1], files[2]});
  EXPECT_EQ(s.files, names);
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(s.ends, committed);
  EXPECT_TRUE(s.damage.empty()) << s.damage;
  files[2].resize(files[2].size() - 3);  // train_final.csv loses part of b's row
  const CommittedState cut = committed_state_of(journal, {files[0], files[1], files[2]});
  EXPECT_EQ(cut.records, 2u);
  EXPECT_EQ(cut.damage, "train_final.csv:3: damaged: holds 16 bytes, the journal's record 2 needs 19");
}

}  // namespace
}  // namespace attnbench
