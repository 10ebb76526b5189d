// The first step of a sweep: the checks that must pass before anything is written, the
// peer, and the run folder, created or reopened.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "driver/peer_torch.hpp"
#include "driver/run_folder.hpp"
#include "driver/sweep.hpp"

namespace attnbench {

struct OpenedRun {
  std::unique_ptr<TorchPeer> peer;  // null without --peer
  RunFolder folder;
};

// With --resume, refuses (std::invalid_argument, unless options.force) a run made on
// another host, oneDNN or commit (`machine`: build_and_machine()) or with another torch
// version; starts the peer (options.peer) when `with_peer`, before the folder, so that a
// peer that cannot start leaves nothing behind; then creates the folder (or reopens it
// for appending).
OpenedRun open_run(const SweepOptions& options, const nlohmann::json& machine, bool with_peer);

}  // namespace attnbench
