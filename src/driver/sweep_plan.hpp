// What a sweep will do, before it does it: each point's description, where the peer runs,
// the time estimates (the progress line's ETA) and the --dry-run listing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "driver/grid.hpp"
#include "driver/point_bench.hpp"

namespace attnbench {

// Puts the settings given as run flags (by setting name, e.g. {{"stages", "step,keys"},
// {"repetitions", "10"}}; lists comma-separated) into every point of `grid`: a flag given
// overrides every scenario row's setting, a flag not given leaves them. Checks every flag
// first, even for an empty grid; throws std::invalid_argument naming the flag, e.g.
// "--stages: bad value 'step,x': unknown stage 'x'; known: keys, ...".
void apply_setting_flags(Grid& grid, const std::map<std::string, std::string>& flags);

// One line naming a point's sizes, threads, impl and dtype, after its name if it has one, e.g.
// "lesson: batch 2 src_len 10 tgt_len 10 emb 16 enc 16 dec 20 attn 32 vocab 100 threads 1 onednn f32".
std::string describe_point(const GridPoint& point);

// Whether the peer measures at each point of `grid`: at the first point of each problem
// among those whose settings ask for the peer (once per problem, whatever the impl).
std::vector<bool> peer_points(const Grid& grid);

// Estimated seconds per point of `grid`, each with its own settings; a point where the
// peer runs also carries the peer's time, taken to be attnbench's.
std::vector<double> point_estimates(const Grid& grid);

// Prints the --dry-run table: every point with its scorers, memory and time estimate, then the total.
void print_plan(const Grid& grid, std::uint64_t max_memory);

// A byte count in GiB (2^30 bytes).
double gib(std::uint64_t bytes);

}  // namespace attnbench
