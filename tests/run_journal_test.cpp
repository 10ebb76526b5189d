// The journal's committed state: whole lines commit, a torn line or tail does not, a file
// that lost committed bytes is damaged from the first record it no longer matches.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/run_journal.hpp"

namespace attnbench {
namespace {

struct Folder {
  std::vector<std::string> files = {"t\n", "s\n", "e\n"};
  std::string journal = journal_head();
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
  std::size_t at = journal_head().size();
  for (std::size_t& end : line_ends) end = at = f.journal.find('\n', at) + 1;
  for (std::size_t size = 0; size < f.journal.size(); ++size) {
    Folder cut = f;
    cut.journal.resize(size);
    const CommittedState s = cut.state();
    std::size_t whole = 0;
    for (std::size_t end : line_ends) whole += end <= size;
    EXPECT_EQ(s.records, whole) << size;
    EXPECT_TRUE(s.damage.empty() || size < journal_head().size()) << size << ": " << s.damage;
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
      EXPECT_NE(s.damage.find(journal_files()[file] + ":"), std::string::npos) << s.damage;
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

}  // namespace
}  // namespace attnbench
