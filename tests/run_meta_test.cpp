// resume_mismatch: which build fields stop a run folder from being resumed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "driver/run_meta.hpp"

namespace attnbench {
namespace {

const nlohmann::json kHere = {{"host", "node1"}, {"onednn_version", "2.6.0"}, {"git_commit", "abc"}};

TEST(ResumeMismatch, SameBuildMayResume) {
  EXPECT_EQ(resume_mismatch({{"build", kHere}}, kHere), "");
}

TEST(ResumeMismatch, NamesEveryFieldThatDiffersWithBothValues) {
  const nlohmann::json then = {{"host", "node2"}, {"onednn_version", "2.6.0"}, {"git_commit", "def"}};
  EXPECT_EQ(resume_mismatch({{"build", then}}, kHere), "host was node2, now node1; git_commit was def, now abc");
}

TEST(ResumeMismatch, OtherFusedLoopsStopAResume) {
  nlohmann::json then = kHere, here = kHere;
  then["fused_loops"] = "portable";
  here["fused_loops"] = "avx512";
  EXPECT_EQ(resume_mismatch({{"build", then}}, here), "fused_loops was portable, now avx512");
}

TEST(ResumeMismatch, AnotherFusedBf16QueryStopsAResume) {
  nlohmann::json then = kHere, here = kHere;
  then["fused_bf16_query"] = "bf16";
  here["fused_bf16_query"] = "f32";
  EXPECT_EQ(resume_mismatch({{"build", then}}, here), "fused_bf16_query was bf16, now f32");
}

TEST(ResumeMismatch, AFieldThatIsNotAStringReadsAsUnknownInsteadOfThrowing) {
  // The fuzzer's input: no "build", and a top-level "host" that is an object.
  const nlohmann::json damaged = nlohmann::json::parse(R"({"grid": [], "host": {"shards": 2}})");
  EXPECT_EQ(resume_mismatch(damaged, kHere),
            "host was ?, now node1; onednn_version was ?, now 2.6.0; git_commit was ?, now abc");
  EXPECT_EQ(resume_mismatch({{"build", 7}}, kHere),
            "host was ?, now node1; onednn_version was ?, now 2.6.0; git_commit was ?, now abc");
}

}  // namespace
}  // namespace attnbench
