// The report `attnbench status DIR` prints, shared with `submit --wait`.
#pragma once

#include <ostream>

#include "driver/slurm_status.hpp"

namespace attnbench {

// One line per shard and one for the merge job, the counts and the rows so far, then
// the end of each failed shard's Slurm output and the command that resumes the run.
void print_run_state(const RunState& run, std::ostream& out);

}  // namespace attnbench
