// Shared by the GoogleTest suites: the f32-vs-double and bf16-vs-double tolerances,
// deterministic test shapes, and random inputs.
#pragma once

#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/problem.hpp"
#include "driver/roofline_measure.hpp"
#include "variants/registry.hpp"

namespace attnbench::test {

// A size or index n >= 0 as the std::size_t that containers take.
inline std::size_t count(std::int64_t n) { return static_cast<std::size_t>(n); }

// Sets environment variable `name` to `value` for its lifetime, then restores it (or unsets
// it when it was unset). For settings read while something is built, e.g. FusedProjection's
// ATTNBENCH_FUSED_BF16_QUERY. Example: const ScopedEnv query("ATTNBENCH_FUSED_BF16_QUERY", "f32");
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* before = ::getenv(name_.c_str())) before_ = before;
    ::setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (before_)
      ::setenv(name_.c_str(), before_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> before_;
};

// Element i of an f32 result passes against the double reference when
//   |ours_i - ref_i| <= kRelTol * max(|ref_i|, kFloorFraction * max_j |ref_j|),
// i.e. relative 1e-5, floored at a quarter of the tensor's largest finite magnitude
// so that cancellation near zero is not a false failure. Non-finite reference values
// (masked scores are -inf) must be matched exactly.
// Why a quarter: f32 rounding leaves an absolute error that scales with the largest
// terms, not with the element. Over this suite's shapes it reaches 1.1e-6 x max|ref|
// (median 1.4e-7), so a floor at 1% (1e-7 x max) fails on legitimate rounding; the
// floor of 2.5e-6 x max leaves a 2x margin. Relative errors of elements above the
// floor stay below 4.2e-6, a 2x margin under kRelTol.
inline constexpr double kRelTol = 1e-5;
inline constexpr double kFloorFraction = 0.25;

// How close a result must be to the double reference:
//   |ours_i - ref_i| <= rel * max(|ref_i|, floor_fraction * max_j |ref_j|).
struct Tolerance {
  double rel;
  double floor_fraction;
};

inline constexpr Tolerance kF32Tolerance{kRelTol, kFloorFraction};

// --dtype bf16 (every matmul takes bf16 inputs, accumulates in f32): element i passes
// when |ours_i - ref_i| <= 2^-4 x max_j |ref_j|, i.e. floor_fraction 1.
// Why: bf16 keeps 8 significant bits, so rounding an input costs a relative error up
// to u = 2^-8, a product a*b up to 2u, and a dot product of length K is off by at most
// 2u * sum_i |a_i b_i| (f32 accumulation adds K * 2^-24, negligible). A score passes
// through up to three such matmuls (U h, W s, then v. or the batched dot, whose inputs
// are rounded again), and the decoder state feeds last step's errors back in, so the
// worst case is several u times sum |terms|, which exceeds max |ref| wherever the terms
// cancel. The reference does not expose sum |terms|, hence a rule relative to the
// tensor's largest magnitude, calibrated on this suite: the worst is 6.9u (dot scores of
// a decode's first step, max |ref| 0.013 from terms ~0.05), every other tensor stays
// below 2.3u (median 0.1u to 1.1u); 16u = 2^-4 leaves a 2.3x margin, and still fails a
// wrong layout or a stale buffer, whose errors are O(max |ref|).
inline constexpr Tolerance kBf16Tolerance{0x1p-4, 1.0};

// The tolerance of results computed with matmul inputs of type `dtype`.
inline Tolerance tolerance_for(DType dtype) { return dtype == DType::bf16 ? kBf16Tolerance : kF32Tolerance; }

// Checks `ours` against `ref` element by element; on failure names the tensor, the
// first failing index with both values, and how many elements failed.
// Example: EXPECT_TRUE(near_reference("scores", ours, ref, tolerance_for(p.dtype)));
inline ::testing::AssertionResult near_reference(std::string_view name, std::span<const double> ours,
                                                 std::span<const double> ref, Tolerance tolerance = kF32Tolerance) {
  if (ours.size() != ref.size())
    return ::testing::AssertionFailure() << name << ": size " << ours.size() << " != reference size " << ref.size();
  double largest = 0.0;
  for (double r : ref)
    if (std::isfinite(r)) largest = std::max(largest, std::abs(r));
  const double floor = tolerance.floor_fraction * largest;
  std::size_t failures = 0, first = 0;
  double first_tol = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    bool ok;
    double tol = 0.0;
    if (!std::isfinite(ref[i])) {
      ok = ours[i] == ref[i];  // -inf == -inf; NaN never passes
    } else {
      tol = tolerance.rel * std::max(std::abs(ref[i]), floor);
      ok = std::abs(ours[i] - ref[i]) <= tol;  // false for NaN or inf in ours
    }
    if (!ok && failures++ == 0) {
      first = i;
      first_tol = tol;
    }
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  std::ostringstream out;
  out.precision(9);
  out << name << "[" << first << "]: ours " << ours[first] << ", reference " << ref[first] << ", |diff| "
      << std::abs(ours[first] - ref[first]) << " > tolerance " << first_tol << " (" << failures << " of " << ref.size()
      << " elements fail)";
  return ::testing::AssertionFailure() << out.str();
}

inline ::testing::AssertionResult near_reference(std::string_view name, std::span<const float> ours,
                                                 std::span<const double> ref, Tolerance tolerance = kF32Tolerance) {
  const std::vector<double> widened(ours.begin(), ours.end());
  return near_reference(name, std::span<const double>(widened), ref, tolerance);
}

// One named test point; the name is valid as a gtest parameter name.
struct Case {
  std::string name;
  Problem problem;
};

// gtest prints a failing parameter with this: its name and a repro command line.
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " {" << repro_flags(c.problem) << "}"; }

// "b1_l17_e34_d33_a17": the sizes a scorer sees.
inline std::string shape_name(const Problem& p) {
  std::ostringstream out;  // not operator+: GCC 12 warns falsely (-Wrestrict) on such chains
  out << "b" << p.batch << "_l" << p.src_len << "_e" << p.enc_dim << "_d" << p.dec_dim << "_a" << p.attn_dim;
  return out.str();
}

// "torch_t2_min5": init kind, thread count and the shortest source length if padded.
inline std::string run_name(const Problem& p) {
  std::ostringstream out;
  out << to_string(p.init) << "_t" << p.threads;
  if (p.len_min != 0) out << "_min" << p.len_min;
  return out.str();
}

inline constexpr std::uint32_t kShapeSeed = 20240611;

// Random shapes each scorer is checked on (make_cases keeps the edge cases among them).
inline constexpr std::size_t kShapes = 24;

// Every scorer's name, in the table's order.
inline std::vector<std::string> all_scorer_names() {
  std::vector<std::string> names;
  for (const ScorerInfo& info : scorer_table()) names.emplace_back(info.name);
  return names;
}

// The fixed edge cases that open make_cases(), each with a name saying what it is.
struct EdgeShape {
  const char* name;
  std::int64_t B, L, E, D, A, len_min;
  InitKind init;
  int threads;
};
inline constexpr EdgeShape kEdgeShapes[] = {
    {"lesson", 2, 10, 16, 20, 32, 0, InitKind::torch, 1},                   // the lesson's sizes
    {"smallest", 1, 1, 2, 1, 1, 0, InitKind::fast, 1},                      // smallest possible
    {"batch1_odd_2threads", 1, 17, 34, 33, 17, 0, InitKind::torch, 2},      // batch 1, odd sizes
    {"padded_to_5", 3, 33, 18, 17, 33, 5, InitKind::fast, 1},               // padded down to 5
    {"one_position", 4, 1, 8, 5, 3, 0, InitKind::torch, 1},                 // one source position
    {"padded_to_1_2threads", 5, 17, 66, 33, 5, 1, InitKind::fast, 2},       // padded down to 1
    {"padded_torch_2threads", 2, 33, 34, 17, 17, 2, InitKind::torch, 2},    // padded, torch
};
inline constexpr std::size_t kEdgeCount = std::size(kEdgeShapes);

// Deterministic test points: first fixed edge cases (batch 1, src_len 1, sizes 17
// and 33, padding, 2 threads, both init kinds), then random ones from
// std::mt19937(seed) until there are `count`. enc_dim is always even.
inline std::vector<Case> make_cases(std::size_t count, std::uint32_t seed = kShapeSeed) {
  const auto point = [](std::int64_t B, std::int64_t L, std::int64_t E, std::int64_t D, std::int64_t A,
                        std::int64_t len_min, InitKind init, int threads) {
    Problem p;
    p.batch = B;
    p.src_len = L;
    p.enc_dim = E;
    p.dec_dim = D;
    p.attn_dim = A;
    p.len_min = len_min;
    p.init = init;
    p.threads = threads;
    return p;
  };
  std::vector<Problem> points;
  for (const EdgeShape& edge : kEdgeShapes)
    points.push_back(point(edge.B, edge.L, edge.E, edge.D, edge.A, edge.len_min, edge.init, edge.threads));
  std::mt19937 rng(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::int64_t odd_sizes[] = {1, 3, 5, 7, 9, 17, 33};
  while (points.size() < count) {
    const auto size = [&](std::int64_t hi) { return pick(0, 2) == 0 ? odd_sizes[pick(0, 6)] : pick(1, hi); };
    // One draw per statement: the order of evaluation of arguments is unspecified.
    const std::int64_t B = pick(1, 6), L = size(40), E = 2 * size(20), D = size(40), A = size(40);
    const InitKind init = pick(0, 1) == 0 ? InitKind::fast : InitKind::torch;
    const int threads = static_cast<int>(pick(1, 2));
    Problem p = point(B, L, E, D, A, 0, init, threads);
    if (p.batch > 1 && pick(0, 1) == 1) p.len_min = pick(1, p.src_len);
    points.push_back(p);
  }
  std::vector<Case> cases;
  for (std::size_t i = 0; i < count && i < points.size(); ++i) {
    Problem& p = points[i];
    std::mt19937 more(seed + static_cast<std::uint32_t>(i));
    const auto draw = [&](std::int64_t lo, std::int64_t hi) {
      return std::uniform_int_distribution<std::int64_t>(lo, hi)(more);
    };
    p.tgt_len = draw(1, 6);
    p.emb_dim = draw(1, 24);
    p.vocab = draw(2, 150);
    p.seed = static_cast<std::uint64_t>(draw(0, 1'000'000));
    std::ostringstream name;
    name << "c" << (i < 10 ? "0" : "") << i << "_" << shape_name(p);
    cases.push_back({name.str(), p});
  }
  return cases;
}

// The edge cases of make_cases(count), named by what they are ("lesson", "smallest", ...).
inline std::vector<Case> edge_cases(std::size_t count = kShapes, std::uint32_t seed = kShapeSeed) {
  std::vector<Case> cases = make_cases(count, seed);
  cases.resize(std::min(cases.size(), kEdgeCount));
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].name = kEdgeShapes[i].name;
  return cases;
}

// The random cases of make_cases(count): all but the edge cases.
inline std::vector<Case> random_cases(std::size_t count = kShapes, std::uint32_t seed = kShapeSeed) {
  std::vector<Case> cases = make_cases(count, seed);
  cases.erase(cases.begin(), cases.begin() + static_cast<std::ptrdiff_t>(std::min(cases.size(), kEdgeCount)));
  return cases;
}

// The same cases computed with matmul inputs of type `dtype`.
inline std::vector<Case> with_dtype(std::vector<Case> cases, DType dtype) {
  for (Case& c : cases) c.problem.dtype = dtype;
  return cases;
}

// The cases whose examples have different lengths (some positions are padding).
inline std::vector<Case> padded_cases(std::size_t count, std::uint32_t seed = kShapeSeed) {
  std::vector<Case> cases;
  for (Case& c : make_cases(count, seed))
    if (c.problem.batch > 1 && c.problem.len_min != 0 && c.problem.len_min < c.problem.src_len)
      cases.push_back(std::move(c));
  return cases;
}

// n floats uniform in [lo, hi) from std::mt19937(seed): test inputs such as H and s.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<double> widen(std::span<const float> v) { return {v.begin(), v.end()}; }

}  // namespace attnbench::test

namespace attnbench {
// gtest prints an InitKind parameter by name instead of its bytes.
inline void PrintTo(InitKind k, std::ostream* os) { *os << to_string(k); }
}  // namespace attnbench
