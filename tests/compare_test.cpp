// compare on two synthetic run folders: NEW is exactly 2x slower for `additive` and
// unchanged for `dot`.
#include "driver/compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "driver/csv_io.hpp"
#include "driver/schema.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;

std::size_t index_of(auto const& columns, std::string_view name) {
  return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) - columns.begin());
}

// A timing key with every size "1" except scorer and stage.
TimingKey key(const std::string& scorer, const std::string& stage) {
  TimingKey k(schema::kTimingKey.size(), "1");
  k[index_of(schema::kTimingKey, "scorer")] = scorer;
  k[index_of(schema::kTimingKey, "stage")] = stage;
  return k;
}

struct Point {
  TimingKey key;
  double median_ns;
  std::vector<double> samples;  // empty: none written
  std::string status = "ok";
};

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Writes timing.csv (and samples.csv when with_samples) into dir.
void write_run(const fs::path& dir, const std::vector<Point>& points, bool with_samples = true) {
  fs::create_directories(dir);
  std::vector<std::string> header(schema::kTimingKey.begin(), schema::kTimingKey.end());
  header.insert(header.end(), schema::kTimingValues.begin(), schema::kTimingValues.end());
  std::string timing = csv_line(header);
  std::vector<std::string> sample_header(schema::kTimingKey.begin(), schema::kTimingKey.end());
  sample_header.insert(sample_header.end(), schema::kSampleValues.begin(), schema::kSampleValues.end());
  std::string samples = csv_line(sample_header);
  for (const Point& p : points) {
    std::vector<std::string> values(schema::kTimingValues.size(), "0");
    values[index_of(schema::kTimingValues, "median_ns")] = std::to_string(p.median_ns);
    values[index_of(schema::kTimingValues, "status")] = p.status;
    values[index_of(schema::kTimingValues, "repro")] = "attnbench probe --scorer " + p.key[0];
    std::vector<std::string> row = p.key;
    row.insert(row.end(), values.begin(), values.end());
    timing += csv_line(row);
    for (std::size_t r = 0; r < p.samples.size(); ++r) {
      std::vector<std::string> sample = p.key;
      sample.insert(sample.end(), {std::to_string(r), "10", std::to_string(p.samples[r])});
      samples += csv_line(sample);
    }
  }
  write_file(dir / "timing.csv", timing);
  if (with_samples) write_file(dir / "samples.csv", samples);
}

std::vector<double> scaled(std::vector<double> x, double factor) {
  for (double& v : x) v *= factor;
  return x;
}

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("attnbench_compare_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    const std::vector<double> base = {98, 99, 100, 101, 102};
    write_run(root_ / "old", {
                                 {key("additive", "step"), 100, base},
                                 {key("additive", "decode"), 1000, scaled(base, 10)},
                                 {key("dot", "step"), 100, base},
                                 {key("dot", "decode"), 1000, scaled(base, 10)},
                                 {key("general", "step"), 50, base},  // only in OLD
                                 {key("scaled_dot", "step"), 0, {}, "skipped: needs 31.2 GiB > --max-memory 16 GiB"},
                             });
    write_run(root_ / "new", {
                                 {key("additive", "step"), 200, scaled(base, 2)},
                                 {key("additive", "decode"), 2000, scaled(base, 20)},
                                 {key("dot", "step"), 100, base},
                                 {key("dot", "decode"), 1000, scaled(base, 10)},
                                 {key("scaled_dot", "step"), 0, {}, "skipped: needs 31.2 GiB > --max-memory 16 GiB"},
                             });
  }
  void TearDown() override { fs::remove_all(root_); }

  const CompareRow& row(const CompareResult& r, const std::string& scorer, const std::string& stage) {
    const auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const CompareRow& x) { return x.key == key(scorer, stage); });
    EXPECT_NE(it, r.rows.end()) << scorer << " " << stage;
    return *it;
  }

  fs::path root_;
};

TEST_F(CompareTest, TwiceAsSlowIsSignificantUnchangedIsNot) {
  const CompareResult r = compare_runs(load_run(root_ / "old"), load_run(root_ / "new"), 0.05);
  ASSERT_EQ(r.rows.size(), 4u);
  for (const std::string stage : {"step", "decode"}) {
    const CompareRow& slow = row(r, "additive", stage);
    EXPECT_DOUBLE_EQ(slow.ratio, 2.0);
    ASSERT_TRUE(slow.p_value.has_value());
    EXPECT_DOUBLE_EQ(*slow.p_value, 2.0 / 252.0);  // 5 vs 5, fully separated
    EXPECT_TRUE(slow.significant);

    const CompareRow& same = row(r, "dot", stage);
    EXPECT_DOUBLE_EQ(same.ratio, 1.0);
    ASSERT_TRUE(same.p_value.has_value());
    EXPECT_DOUBLE_EQ(*same.p_value, 1.0);
    EXPECT_FALSE(same.significant);
  }
  EXPECT_EQ(r.only_old, 1u);  // general; the skipped rows are ignored on both sides
  EXPECT_EQ(r.only_new, 0u);
}

TEST_F(CompareTest, GeomeanPerScorer) {
  const CompareResult r = compare_runs(load_run(root_ / "old"), load_run(root_ / "new"), 0.05);
  ASSERT_EQ(r.geomeans.size(), 2u);
  EXPECT_EQ(r.geomeans[0].scorer, "additive");
  EXPECT_EQ(r.geomeans[0].rows, 2u);
  EXPECT_DOUBLE_EQ(r.geomeans[0].geomean_ratio, 2.0);
  EXPECT_EQ(r.geomeans[1].scorer, "dot");
  EXPECT_DOUBLE_EQ(r.geomeans[1].geomean_ratio, 1.0);
  const std::string table = format_table(r);
  EXPECT_NE(table.find("geomean new/old additive: 2.000 over 2 rows"), std::string::npos) << table;
  EXPECT_NE(table.find("geomean new/old dot: 1.000 over 2 rows"), std::string::npos) << table;
}

TEST_F(CompareTest, TimingPathUsesSiblingSamples) {
  const CompareResult r = compare_runs(load_run(root_ / "old" / "timing.csv"), load_run(root_ / "new" / "timing.csv"));
  ASSERT_TRUE(row(r, "additive", "step").p_value.has_value());
}

TEST_F(CompareTest, MissingSamplesLeavePValueBlank) {
  write_run(root_ / "bare", {{key("additive", "step"), 300, {}}}, /*with_samples=*/false);
  const CompareResult r = compare_runs(load_run(root_ / "old"), load_run(root_ / "bare"));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(r.rows[0].ratio, 3.0);
  EXPECT_FALSE(r.rows[0].p_value.has_value());
  EXPECT_FALSE(r.rows[0].significant);
  const std::string csv = format_csv(r);
  EXPECT_NE(csv.find(",100,300,3,,\n"), std::string::npos) << csv;
}

TEST_F(CompareTest, BaselineModeWithinOneRun) {
  const CompareResult r = compare_to_baseline(load_run(root_ / "new"), "scorer", "dot", 0.05);
  ASSERT_EQ(r.rows.size(), 2u);  // additive step and decode against dot's
  for (const std::string stage : {"step", "decode"}) {
    const CompareRow& x = row(r, "additive", stage);
    EXPECT_DOUBLE_EQ(x.ratio, 2.0);
    ASSERT_TRUE(x.p_value.has_value());
    EXPECT_DOUBLE_EQ(*x.p_value, 2.0 / 252.0);
    EXPECT_TRUE(x.significant);
  }
  ASSERT_EQ(r.geomeans.size(), 1u);
  EXPECT_DOUBLE_EQ(r.geomeans[0].geomean_ratio, 2.0);
}

TEST_F(CompareTest, UnknownBaselineNamesTheValue) {
  try {
    compare_to_baseline(load_run(root_ / "new"), "scorer", "luong", 0.05);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("luong"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("additive, dot"), std::string::npos) << e.what();
  }
}

TEST_F(CompareTest, BaselineAlongAColumnThatIsNotAKeyIsRefused) {
  for (const char* column : {"median_ns", "stage", "nope"}) {
    try {
      compare_to_baseline(load_run(root_ / "new"), column, "x", 0.05);
      FAIL() << "expected std::invalid_argument for " << column;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(column), std::string::npos) << e.what();
    }
  }
}

TEST_F(CompareTest, MissingFilesNameThePath) {
  const fs::path nowhere = root_ / "nowhere";
  try {
    load_run(nowhere);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(nowhere.string()), std::string::npos) << e.what();
  }
  fs::create_directories(root_ / "empty");
  EXPECT_THROW(load_run(root_ / "empty"), std::invalid_argument);
}

TEST_F(CompareTest, CsvOutputHeaderAndRows) {
  const CompareResult r = compare_runs(load_run(root_ / "old"), load_run(root_ / "new"), 0.05);
  write_file(root_ / "compare.csv", format_csv(r));
  const CsvDocument doc = read_csv(root_ / "compare.csv");
  std::vector<std::string> expected(schema::kTimingKey.begin(), schema::kTimingKey.end());
  for (const char* c : {"old_median_ns", "new_median_ns", "ratio", "p_value", "significant"}) expected.emplace_back(c);
  EXPECT_EQ(doc.header, expected);
  ASSERT_EQ(doc.rows.size(), 4u);
  const std::vector<std::string>& first = doc.rows[0].cells;  // additive step, the first row of OLD
  EXPECT_EQ(std::vector<std::string>(first.begin(), first.begin() + 13), key("additive", "step"));
  EXPECT_EQ(first[13], "100");
  EXPECT_EQ(first[14], "200");
  EXPECT_EQ(first[15], "2");
  EXPECT_EQ(first[16], "0.00793650794");  // 2/252
  EXPECT_EQ(first[17], "true");

  const std::string geomeans = format_geomean_csv(r);
  EXPECT_EQ(geomeans, "scorer,rows,geomean_ratio\nadditive,2,2\ndot,2,1\n");
}

TEST_F(CompareTest, RejectsBadAlpha) {
  const RunTables run = load_run(root_ / "old");
  EXPECT_THROW(compare_runs(run, run, 0.0), std::invalid_argument);
  EXPECT_THROW(compare_runs(run, run, 1.0), std::invalid_argument);
}

}  // namespace
}  // namespace attnbench
