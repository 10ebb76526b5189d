#include "driver/run_open.hpp"

#include <stdexcept>
#include <string>

#include "driver/run_meta.hpp"

namespace attnbench {

namespace {

// Why the peer here may not continue the run of `meta`: another torch version. Empty when it may.
std::string peer_mismatch(const nlohmann::json& meta, const TorchPeer& peer) {
  if (!meta.contains("peer") || !meta["peer"].is_object()) return "";
  const std::string there = meta["peer"].value("torch_version", ""),
                    here = peer.description().value("torch_version", "");
  return there == here ? "" : "torch " + there + " there, " + here + " here";
}

void refuse_unless_forced(const std::string& mismatch, bool force) {
  if (!mismatch.empty() && !force)
    throw std::invalid_argument("--resume: the run was made elsewhere (" + mismatch +
                                "); add --force to continue it anyway");
}

}  // namespace

OpenedRun open_run(const SweepOptions& options, const nlohmann::json& machine, bool with_peer) {
  if (options.resumed) refuse_unless_forced(resume_mismatch(*options.resumed, machine), options.force);
  std::unique_ptr<TorchPeer> peer;
  if (options.peer && with_peer) {
    peer = std::make_unique<TorchPeer>(*options.peer);
    if (options.resumed) refuse_unless_forced(peer_mismatch(*options.resumed, *peer), options.force);
  }
  return {std::move(peer), RunFolder(options.out_dir, FolderKind::run, options.resumed.has_value())};
}

}  // namespace attnbench
