// Projected dot-product scorer e_tj = (W s) . (U h_j) * scale.
#pragma once

#include <memory>

#include "core/scorer.hpp"

namespace attnbench {

// Parameters in creation order: W: Linear(D, A), U: Linear(E, A), no bias.
// scale 1 gives `dot`, 1/sqrt(A) gives `scaled_dot`.
std::unique_ptr<Scorer> make_dot(ParamSource& source, const ScorerShape& shape, bool scaled);

// A multiply-add costs about 1/macs_per_float_read of streaming one float: the f32 ridge
// of the machines measured, rounded down to a power of two. From DRAM, kMacsPerFloatRead:
// 132 GFLOP/s over 11.2 GB/s on the Intel Xeon of the performance issue (24 multiply-adds per
// float), 201.7 over 32.2 on a 2-core AMD EPYC (Zen 5, 12.5). From the L3, where the rows
// a step streams stay between steps when they take at most kCachedStepBytes,
// kMacsPerCachedFloatRead: about 6 on both AMD EPYC VMs measured (Zen 4 and Zen 5). The
// 16 MiB assumes the L3 a core can count on: 32 MiB per Zen 4 or Zen 5 CCD; not measured on
// an Intel Xeon.
inline constexpr double kMacsPerFloatRead = 16;
inline constexpr double kMacsPerCachedFloatRead = 4;
inline constexpr double kCachedStepBytes = 16.0 * 1024 * 1024;

// kMacsPerCachedFloatRead when the rows a step streams take at most kCachedStepBytes, else
// kMacsPerFloatRead. Counted as f32 (bf16 rows take half: the choice errs towards DRAM).
double macs_per_float_read(double step_bytes);

// The fused dot/scaled_dot's three algorithms for e_j = scale (W s) . (U h_j):
//   keys:        q = scale W s per step against the keys U h_j (B, L, A) of the sequence;
//   state_keys:  s itself against keys M h_j (B, L, D), M = scale W^T U (D, E) folded once
//                when built: no query at all per step (general's step with M for its W);
//   annotations: q = (scale U^T W) s (B, E) per step against H itself, no keys.
enum class DotPath { keys, state_keys, annotations };

// What scoring costs in one fused dot/scaled_dot step beyond what the step needs anyway
// (reading H and s for the context, writing e): floats read and multiply-adds.
//   keys:        W (A, D) and the keys (B, L, A); B D A + B L A multiply-adds; streams the
//                keys and H;
//   state_keys:  the keys (B, L, D); B L D multiply-adds; streams the keys and H;
//   annotations: scale U^T W (E, D), H being read anyway; B D E + B L E multiply-adds;
//                streams H.
// Scoring from H saves the keys' traffic (the context reads H in the same pass, from cache)
// but costs B D E multiply-adds for the folded query instead of B D A.
struct DotStepWork {
  double floats = 0, macs = 0;
  double macs_per_float = kMacsPerFloatRead;  // macs_per_float_read of the rows the path streams
  double cost() const { return floats + macs / macs_per_float; }
};

DotStepWork dot_step_work(const ScorerShape& shape, DotPath path);

// The fused dot's algorithm at `shape`: the one whose step costs least (DotStepWork::cost),
// state_keys only when D <= A, so that its keys (B L E D multiply-adds a sequence) cost no
// more than U h_j's (B L E A).
DotPath fused_dot_path(const ScorerShape& shape);

// Cost of one `score` step at p: q = W s, then q . k_j per position and the scale (oneDNN;
// the fused q carries it); the fused dot from state keys: s . k_j (k_j = M h_j); from H:
// q = (scale U^T W) s, then q . h_j.
StageCost dot_score_cost(const Problem& p, bool scaled);

// Cost of keys K = U h_j; M h_j for the fused dot from state keys; none from H.
StageCost dot_keys_cost(const Problem& p);

// The step's cost from its parts (ScorerInfo::step_cost): the fused dot scoring from H
// reads H (B, L, E) once for the scores and the context.
StageCost dot_step_cost(const Problem& p, StageCost score, StageCost attend);

}  // namespace attnbench
