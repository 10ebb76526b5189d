// The main step of a sweep: every point of the grid measured and its rows appended to the
// run folder, then the peer's rows for the same problem.
#pragma once

#include <cstddef>
#include <optional>

#include "driver/grid.hpp"
#include "driver/peer_torch.hpp"
#include "driver/roofline.hpp"
#include "driver/run_folder.hpp"
#include "driver/sweep.hpp"

namespace attnbench {

// Measures the points of `grid` (this shard's) in order, skipping every (point, scorer,
// impl) whose timing rows for the point's stages the folder already holds (--resume), and
// appends each point's rows whole. With a peer, the peer then measures the same problem
// (once for all impls of it) unless the folder has its rows. A point over
// options.max_memory_bytes gets skipped rows. Stops between points once a signal asks
// (stop_requested()); a first signal still lets the peer finish the point it has.
// Counts the points finished in `points_done` as it goes, and rethrows what a peer throws.
void measure_grid(const Grid& grid, const SweepOptions& options, RunFolder& folder, TorchPeer* peer,
                  const std::optional<Roofline>& roofline, std::size_t& points_done);

}  // namespace attnbench
