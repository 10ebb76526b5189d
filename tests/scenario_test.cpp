// Scenario CSV files: parsing, error messages with file:line, and the shipped scenarios.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "driver/csv_io.hpp"
#include "driver/scenario.hpp"
#include "variants/registry.hpp"

#ifndef ATTNBENCH_SOURCE_DIR
#error "ATTNBENCH_SOURCE_DIR must name the source tree"
#endif

namespace attnbench {
namespace {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed at the end of the test.
class ScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("attnbench_scenario_test_" + std::string(info->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }

  // The message load_scenario throws for `text`, or "" if it loads.
  std::string error_of(const std::string& text) {
    const fs::path path = write("s.csv", text);
    try {
      load_scenario(path, Problem{});
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }

  std::string file() const { return (dir_ / "s.csv").string(); }

  fs::path dir_;
};

std::vector<std::string> all_scorers() {
  std::vector<std::string> names;
  for (const ScorerInfo& info : scorer_table()) names.push_back(info.name);
  return names;
}

TEST_F(ScenarioTest, CommentsEmptyCellsListsAndRanges) {
  const fs::path path = write("s.csv",
                              "# what this measures\n"
                              "# and how long\n"
                              "scorer,src_len,attn_dim,threads,init\n"
                              "dot;general,10;50,8:32:*2,,\n"
                              "\n"
                              "# a second block\n"
                              "all,10,8,2,torch\n");
  Problem defaults;
  defaults.threads = 1;
  const Grid g = load_scenario(path, defaults).grid;
  ASSERT_EQ(g.size(), 7u);  // 2 x 3, then one new point
  EXPECT_EQ(g[0].problem.src_len, 10);
  EXPECT_EQ(g[0].problem.attn_dim, 8);
  EXPECT_EQ(g[0].problem.threads, 1);  // empty cell: the default
  EXPECT_EQ(g[0].problem.init, InitKind::fast);
  EXPECT_EQ(g[2].problem.attn_dim, 32);
  EXPECT_EQ(g[3].problem.src_len, 50);
  EXPECT_EQ(g[0].scorers, (std::vector<std::string>{"dot", "general"}));
  EXPECT_EQ(g[6].problem.threads, 2);
  EXPECT_EQ(g[6].problem.init, InitKind::torch);
  EXPECT_EQ(g[6].scorers, all_scorers());
}

TEST_F(ScenarioTest, RowsYieldingTheSamePointMergeScorers) {
  const Grid g = load_scenario(write("s.csv", "scorer,src_len\ndot,10;20\n\"general\",\" 20 \"\n"), Problem{}).grid;
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[1].scorers, (std::vector<std::string>{"dot", "general"}));
}

TEST_F(ScenarioTest, UnknownColumn) {
  EXPECT_EQ(error_of("# c\nscorer,heads\ndot,8\n"),
            file() + ":2: unknown column 'heads'; known: scorer, batch, src_len, tgt_len, emb_dim, enc_dim, "
                     "dec_dim, attn_dim, vocab, threads, impl, dtype, seed, init, len_min, name, stages, "
                     "repetitions, min_time, peer, include");
}

TEST_F(ScenarioTest, RepeatedColumn) {
  EXPECT_EQ(error_of("batch,batch\n1,2\n"), file() + ":1: column 'batch' appears twice");
}

TEST_F(ScenarioTest, BadValueNamesFileLineColumnAndValue) {
  // Line 5 counts the comment lines and the blank line.
  EXPECT_EQ(error_of("# one\n# two\nscorer,src_len\n\nall,10:x\n"),
            file() + ":5: column 'src_len': bad value '10:x': range end 'x' is not a whole number");
  const std::string m = error_of("scorer,src_len\ndot,10\n# note\nluong,10\n");
  EXPECT_EQ(m.rfind(file() + ":4: column 'scorer': bad value 'luong': unknown scorer 'luong'; known: all, ", 0), 0u)
      << m;
}

TEST_F(ScenarioTest, SizeErrorFoundAfterCombiningFields) {
  EXPECT_EQ(error_of("#\nsrc_len,enc_dim\n10,16\n10,16;17\n"),
            file() + ":4: column 'enc_dim': bad value '17': must be even (it is 2 x the bidirectional encoder's "
                     "hidden size)");
  const std::string e = error_of("src_len\n10\n4\n");  // len_min default 0 is fine
  EXPECT_EQ(e, "");
  const std::string m = error_of("len_min,src_len\n3,10\n5,4;10\n");
  EXPECT_EQ(m.rfind(file() + ":3: column 'len_min': bad value '5': must be between 1 and --src-len (4)", 0), 0u)
      << m;
}

TEST_F(ScenarioTest, DefaultColumnAtFaultSaysSo) {
  Problem defaults;
  defaults.len_min = 8;
  const fs::path path = write("s.csv", "src_len\n10\n4\n");
  try {
    load_scenario(path, defaults);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(file() + ":3: column 'len_min': bad value '8': ", 0), 0u) << m;
    EXPECT_NE(m.find("(no column 'len_min' here: the default)"), std::string::npos) << m;
  }
}

TEST_F(ScenarioTest, MalformedCsv) {
  EXPECT_EQ(error_of("scorer,src_len\ndot,10,20\n"), file() + ":2: expected 2 cells as in the header, got 3");
  EXPECT_EQ(error_of("scorer,src_len\ndot,\"10\n"), file() + ":2: malformed CSV (unterminated quoted field)");
  EXPECT_EQ(error_of("# only a comment\n"), file() + ":1: empty file, expected a header line");
  EXPECT_EQ(error_of("# c\nscorer,src_len\n"), file() + ":2: no rows after the header");
}

TEST_F(ScenarioTest, MessagesAreOneLine) {
  for (const std::string text : {"a\n1\n", "src_len\nx\n", "src_len,batch\n1,0\n"}) {
    const std::string m = error_of(text);
    EXPECT_FALSE(m.empty());
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST_F(ScenarioTest, ResolveByNameOrPath) {
  const fs::path scenarios = dir_ / "scenarios";
  fs::create_directories(scenarios);
  std::ofstream(scenarios / "default.csv") << "src_len\n10\n";
  std::ofstream(scenarios / "lesson.csv") << "src_len\n10\n";
  const fs::path other = write("mine.csv", "src_len\n10\n");
  EXPECT_EQ(resolve_scenario("default", scenarios), scenarios / "default.csv");
  EXPECT_EQ(resolve_scenario("lesson.csv", scenarios), scenarios / "lesson.csv");
  EXPECT_EQ(resolve_scenario(other.string(), scenarios), other);
  try {
    resolve_scenario("nope", scenarios);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("unknown scenario 'nope'", 0), 0u) << m;
    EXPECT_NE(m.find("available: default, lesson"), std::string::npos) << m;
  }
}

// --- run settings in a row ----------------------------------------------------------------

TEST_F(ScenarioTest, RowsWithoutSettingsGetTheDefaults) {
  const Grid g = load_scenario(write("s.csv", "src_len\n10\n"), Problem{}).grid;
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].settings, PointSettings{});
  EXPECT_EQ(g[0].settings.bench.stages, default_stages());
  EXPECT_EQ(g[0].settings.bench.repetitions, 5);
  EXPECT_EQ(g[0].settings.bench.min_time, 0.05);
  EXPECT_EQ(g[0].settings.peer, "");
  EXPECT_EQ(g[0].settings.name, "");
}

TEST_F(ScenarioTest, EachRowSetsItsOwnSettings) {
  const Grid g = load_scenario(write("s.csv",
                                     "name,src_len,threads,stages,repetitions,min_time,peer\n"
                                     "small,10,1;2,step;keys,3,0.25,torch\n"
                                     "big,50,,,,,none\n"
                                     ",60,,decode,,,\n"),
                               Problem{})
                     .grid;
  ASSERT_EQ(g.size(), 4u);
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(g[i].settings.name, "small");
    EXPECT_EQ(g[i].settings.bench.stages, (std::vector<std::string>{"keys", "step"}));  // schema order
    EXPECT_EQ(g[i].settings.bench.repetitions, 3);
    EXPECT_EQ(g[i].settings.bench.min_time, 0.25);
    EXPECT_EQ(g[i].settings.peer, "torch");
  }
  EXPECT_EQ(g[1].problem.threads, 2);
  EXPECT_EQ(g[2].settings.name, "big");
  EXPECT_EQ(g[2].settings.bench, BenchSettings{});
  EXPECT_EQ(g[2].settings.peer, "");
  EXPECT_EQ(g[3].settings.name, "");
  EXPECT_EQ(g[3].settings.bench.stages, (std::vector<std::string>{"decode"}));
}

TEST_F(ScenarioTest, RowsYieldingTheSamePointNeedTheSameSettings) {
  EXPECT_EQ(load_scenario(write("s.csv", "scorer,src_len,stages\ndot,10,step\ngeneral,10,step\n"), Problem{})
                .grid.at(0)
                .scorers,
            (std::vector<std::string>{"dot", "general"}));
  const std::string m = error_of("scorer,src_len,stages,repetitions\ndot,10;20,step,3\n#\ngeneral,20,keys,4\n");
  EXPECT_EQ(m.rfind(file() + ":4: the point batch 2 src_len 20 ", 0), 0u) << m;
  EXPECT_NE(m.find(" is also in " + file() + ":2 with other settings (stages, repetitions)"), std::string::npos) << m;
}

struct BadSetting {
  std::string column, value, reason;
};

class ScenarioBadSetting : public ScenarioTest, public ::testing::WithParamInterface<BadSetting> {};

TEST_P(ScenarioBadSetting, NamesFileLineColumnValueAndReason) {
  const BadSetting& bad = GetParam();
  EXPECT_EQ(error_of("# c\nsrc_len," + bad.column + "\n10,\n20,\"" + bad.value + "\"\n"),
            file() + ":4: column '" + bad.column + "': bad value '" + bad.value + "': " + bad.reason);
}

const std::string kKnownStages = "known: keys, score, attend, step, cell, output, encoder, decode, train_step";

INSTANTIATE_TEST_SUITE_P(
    EveryKind, ScenarioBadSetting,
    ::testing::Values(BadSetting{"name", "a b", "a name is letters, digits, '_', '-' and '.'"},
                      BadSetting{"name", "x/y", "a name is letters, digits, '_', '-' and '.'"},
                      BadSetting{"stages", "step;bogus", "unknown stage 'bogus'; " + kKnownStages},
                      BadSetting{"stages", "step;", "unknown stage ''; " + kKnownStages},
                      BadSetting{"stages", "Step", "unknown stage 'Step'; " + kKnownStages},
                      BadSetting{"repetitions", "0", "must be a whole number of at least 1"},
                      BadSetting{"repetitions", "2.5", "must be a whole number of at least 1"},
                      BadSetting{"repetitions", "3;4", "must be a whole number of at least 1"},
                      BadSetting{"repetitions", "99999999999", "must be a whole number of at least 1"},
                      BadSetting{"min_time", "0", "must be a positive number of seconds"},
                      BadSetting{"min_time", "-1", "must be a positive number of seconds"},
                      BadSetting{"min_time", "0.1s", "must be a positive number of seconds"},
                      BadSetting{"min_time", "inf", "must be a positive number of seconds"},
                      BadSetting{"min_time", "nan", "must be a positive number of seconds"},
                      BadSetting{"peer", "jax", "unknown peer; known: torch, none"},
                      BadSetting{"peer", "torch;none", "unknown peer; known: torch, none"}),
    [](const auto& info) { return info.param.column + "_" + std::to_string(info.index); });

// --- include ------------------------------------------------------------------------------------

TEST_F(ScenarioTest, IncludeReadsTheFileInPlaceOfTheRow) {
  fs::create_directories(dir_ / "sub");
  write("sub/sizes.csv", "# two sizes\nname,src_len,batch\nshort,10,2\nlong,50,4\n");
  const fs::path top = write("top.csv", "src_len,include,name\n5,,first\n,sub/sizes.csv,\n7,,last\n");
  const Scenario s = load_scenario(top, Problem{});
  ASSERT_EQ(s.grid.size(), 4u);
  EXPECT_EQ(s.grid[0].problem.src_len, 5);
  EXPECT_EQ(s.grid[1].problem.src_len, 10);
  EXPECT_EQ(s.grid[1].problem.batch, 2);
  EXPECT_EQ(s.grid[1].settings.name, "short");
  EXPECT_EQ(s.grid[2].problem.src_len, 50);
  EXPECT_EQ(s.grid[2].settings.name, "long");
  EXPECT_EQ(s.grid[3].settings.name, "last");
  EXPECT_EQ(s.files, (std::vector<fs::path>{top, dir_ / "sub/sizes.csv"}));
}

TEST_F(ScenarioTest, IncludeRowCellsReplaceTheIncludedRowsCellsAndTheOuterRowWins) {
  write("inner.csv", "scorer,src_len,impl,stages\ndot,10,onednn;fused,keys\ngeneral,20,,\n");
  write("middle.csv", "include,impl,stages,repetitions\ninner.csv,fused,step,3\n");
  const fs::path top = write("top.csv", "include,repetitions,peer\nmiddle.csv,7,torch\n");
  const Scenario s = load_scenario(top, Problem{});
  ASSERT_EQ(s.grid.size(), 2u);
  for (const GridPoint& point : s.grid) {
    EXPECT_EQ(point.problem.impl, Impl::fused);  // replaces onednn;fused and the empty cell
    EXPECT_EQ(point.settings.bench.stages, (std::vector<std::string>{"step"}));
    EXPECT_EQ(point.settings.bench.repetitions, 7);  // the outer include row wins over the middle one
    EXPECT_EQ(point.settings.peer, "torch");
  }
  EXPECT_EQ(s.grid[0].scorers, (std::vector<std::string>{"dot"}));
  EXPECT_EQ(s.grid[1].problem.src_len, 20);
  EXPECT_EQ(s.files.size(), 3u);
}

TEST_F(ScenarioTest, IncludeErrorsNameWhereTheBadTextIs) {
  write("inner.csv", "# c\nsrc_len\n10\nx\n");
  const std::string in_inner = error_of("include\ninner.csv\n");
  EXPECT_EQ(in_inner.rfind((dir_ / "inner.csv").string() + ":4: column 'src_len': bad value 'x': ", 0), 0u) << in_inner;
  write("good.csv", "src_len\n10\n");
  EXPECT_EQ(error_of("include,stages\n\n\ngood.csv,nope\n"),
            file() + ":4: column 'stages': bad value 'nope': unknown stage 'nope'; " + kKnownStages);
  const std::string replaced = error_of("include,src_len\n# c\ngood.csv,0\n");  // the include row's cell is at fault
  EXPECT_EQ(replaced.rfind(file() + ":3: column 'src_len': bad value '0': ", 0), 0u) << replaced;
  EXPECT_EQ(error_of("include\nmissing.csv\n"),
            file() + ":2: column 'include': bad value 'missing.csv': no such file " + (dir_ / "missing.csv").string());
}

TEST_F(ScenarioTest, IncludeCyclesAreRefused) {
  EXPECT_EQ(error_of("include\ns.csv\n"),
            file() + ":2: column 'include': bad value 's.csv': includes itself (s.csv -> s.csv)");
  write("b.csv", "include\ns.csv\n");
  EXPECT_EQ(error_of("src_len,include\n10,\n,b.csv\n"),
            (dir_ / "b.csv").string() + ":2: column 'include': bad value 's.csv': includes itself (s.csv -> b.csv -> "
                                        "s.csv)");
}

// Whether a scenario file is `attnbench train`'s: its header names a `task` column
// (tests/test_train_cli.py checks those).
bool is_train_scenario(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line) && (line.empty() || line[0] == '#')) {
  }
  return ("," + line + ",").find(",task,") != std::string::npos;
}

// Every scenario shipped in scenarios/ loads, starts with a comment, and has points.
TEST(ShippedScenarios, AllLoad) {
  const fs::path dir = fs::path(ATTNBENCH_SOURCE_DIR) / "scenarios";
  std::size_t count = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".csv" || is_train_scenario(entry.path())) continue;
    ++count;
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    EXPECT_EQ(first.rfind("#", 0), 0u) << "should start with a comment saying what it measures";
    Grid g;
    ASSERT_NO_THROW(g = load_scenario(entry.path(), Problem{}).grid);
    EXPECT_FALSE(g.empty());
    for (const GridPoint& p : g) EXPECT_FALSE(p.scorers.empty());
  }
  for (const char* name : {"default", "lesson", "bahdanau2014", "attn_dim", "src_len", "threads"})
    EXPECT_NO_THROW(resolve_scenario(name, dir)) << name;
  EXPECT_GE(count, 6u);
}

TEST(ShippedScenarios, LessonHasTheLessonsSizes) {
  const Grid g = load_scenario(fs::path(ATTNBENCH_SOURCE_DIR) / "scenarios" / "lesson.csv", Problem{}).grid;
  ASSERT_EQ(g.size(), 1u);
  const Problem& p = g[0].problem;
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.src_len, 10);
  EXPECT_EQ(p.enc_dim, 16);
  EXPECT_EQ(p.dec_dim, 20);
  EXPECT_EQ(p.attn_dim, 32);
  EXPECT_EQ(p.init, InitKind::torch);
  EXPECT_EQ(p.seed, 0u);
  EXPECT_EQ(g[0].scorers, all_scorers());
}

// default.csv is sized for about 2 minutes: 30-40 point x scorer combinations.
TEST(ShippedScenarios, DefaultIsSmall) {
  const Grid g = load_scenario(fs::path(ATTNBENCH_SOURCE_DIR) / "scenarios" / "default.csv", Problem{}).grid;
  std::size_t combos = 0;
  for (const GridPoint& p : g) combos += p.scorers.size();
  EXPECT_GE(combos, 30u);
  EXPECT_LE(combos, 40u);
}

}  // namespace
}  // namespace attnbench
