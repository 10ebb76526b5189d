// A grid as JSON, so that meta.json records exactly what a run planned (--resume, merge).
#pragma once

#include <nlohmann/json.hpp>

#include "driver/grid.hpp"

namespace attnbench {

// Each point's Problem fields as text, its scorers and its settings:
// [{"batch": "32", "src_len": "10", ..., "scorers": ["additive", "dot"], "name": "mid",
//   "stages": ["step"], "repetitions": 5, "min_time_s": 0.05, "peer": "torch"}, ...]
// ("peer" is "" without a peer, "name" "" without a name).
nlohmann::json grid_to_json(const Grid& grid);

// The grid a run's meta.json planned: the inverse of grid_to_json on meta["grid"]. A
// point without settings (a run recorded before points had them) takes the run's
// "stages", "repetitions", "min_time_s" and "peer". Throws GridError for a Problem value
// that does not check, std::invalid_argument for a bad setting.
Grid grid_from_meta(const nlohmann::json& meta);

}  // namespace attnbench
