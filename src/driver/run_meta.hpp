// meta.json: what ran, where, with what build (shared/spec/csv-schema.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

// Facts about this build and machine: version, git commit, host, CPU, cores,
// oneDNN version and ISA, OpenMP, compiler, flags, build type, frequency scaling.
nlohmann::json build_and_machine();

// Warnings that make timings less trustworthy (frequency scaling on, not a Release
// build); each one line. Empty when all is well.
std::vector<std::string> timing_warnings(const nlohmann::json& machine);

// The sha256 of a file's bytes, as lower-case hex.
std::string sha256_of_file(const std::filesystem::path& path);

// Why `resumed` (a run's meta.json) may not be continued on this build and machine:
// host, oneDNN version, git commit, fused loops or fused bf16 query differ (read from its
// "build", else from its top level;
// a field missing or not a string reads as "?"). Empty when it may.
std::string resume_mismatch(const nlohmann::json& resumed, const nlohmann::json& here);

// The current UTC time as ISO 8601, e.g. "2026-11-30T03:04:05Z".
std::string utc_now();

}  // namespace attnbench
