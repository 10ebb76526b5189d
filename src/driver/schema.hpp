// Column lists of the output files (shared/spec/csv-schema.md), written once.
// A new column is one entry here plus its value where the row is built.
#pragma once

#include <array>
#include <string_view>

namespace attnbench::schema {

// Columns that identify a timing measurement; --resume and compare match on them.
inline constexpr std::array<std::string_view, 13> kTimingKey = {
    "scorer", "impl", "dtype", "threads", "batch", "src_len", "tgt_len",
    "emb_dim", "enc_dim", "dec_dim", "attn_dim", "vocab", "stage"};

// `bound` is "compute" or "memory": which roof of the roofline limits the row's stage.
inline constexpr std::array<std::string_view, 17> kTimingValues = {
    "repetitions", "iterations", "median_ns", "mean_ns", "stddev_ns", "cv", "min_ns", "max_ns",
    "ns_per_step", "flops", "bytes", "gflops", "gbps", "roofline_pct", "bound", "status", "repro"};

inline constexpr std::array<std::string_view, 3> kSampleValues = {"repetition", "iterations", "ns"};

inline constexpr std::array<std::string_view, 11> kEntropyKey = {
    "scorer", "dtype", "batch", "src_len", "tgt_len", "enc_dim", "dec_dim", "attn_dim", "init", "seed", "len_min"};

// `entropy_diff_f32`: mean entropy of a bf16 row minus that of the same point in f32 (0 for f32).
inline constexpr std::array<std::string_view, 13> kEntropyValues = {
    "samples", "entropy_mean", "entropy_std", "entropy_min", "entropy_max", "entropy_norm_mean",
    "max_weight_mean", "support_mean", "drift_mean", "jacobian_fro_mean", "score_std_mean", "mask_leak_max",
    "entropy_diff_f32"};

// Timed stages, in the order a point reports them.
inline constexpr std::array<std::string_view, 9> kStages = {"keys",   "score",   "attend", "step",      "cell",
                                                            "output", "encoder", "decode", "train_step"};
// Stages timed only when --stages names them (not in the default list).
inline constexpr std::array<std::string_view, 1> kOptInStages = {"train_step"};

}  // namespace attnbench::schema
