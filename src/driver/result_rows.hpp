// The rows of timing.csv, samples.csv and entropy.csv for one measured point,
// in the column order of driver/schema.hpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "driver/point_bench.hpp"
#include "driver/roofline.hpp"

namespace attnbench {

// Timing key cells of scorer p.scorer at stage `stage`.
std::vector<std::string> timing_key(const Problem& p, std::string_view stage);

// Entropy key cells of p.
std::vector<std::string> entropy_key(const Problem& p);

// Finished CSV text (one line per row) for the three files.
struct PointRows {
  std::string timing, samples, entropy;
};

// Rows for one scorer's measurement at p (p.scorer is that scorer), for the stages it
// timed (in schema order); `repro` measures it again.
PointRows measured_rows(const Problem& p, const ScorerMeasurement& m, const std::optional<Roofline>& roofline,
                        const std::string& repro, bool with_entropy);

// timing.csv rows of `stages` with empty values and `status` (e.g. "skipped: needs 31.2 GiB > --max-memory 16 GiB").
std::string skipped_rows(const Problem& p, const std::string& status, const std::string& repro,
                         const std::vector<std::string>& stages);

// "%.9g" of x.
std::string number(double x);

}  // namespace attnbench
