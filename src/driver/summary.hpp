// The table printed at the end of a run: per scorer, the per-step attention time
// at each src_len and the mean normalized entropy.
#pragma once

#include <filesystem>
#include <string>

namespace attnbench {

// Reads the run folder's timing.csv and entropy.csv. A row per scorer (per scorer/impl
// when the run holds several impls). Cell = median, over the points
// with that src_len (other sizes and thread counts pooled), of the `step` stage's
// ns_per_step (score + masked softmax + context), in microseconds.
std::string summary_table(const std::filesystem::path& run_dir);

}  // namespace attnbench
