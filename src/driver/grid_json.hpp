// A grid as JSON, so that meta.json records exactly what a run planned (--resume, merge).
#pragma once

#include <nlohmann/json.hpp>

#include "driver/grid.hpp"

namespace attnbench {

// [{"batch": "32", "src_len": "10", ..., "scorers": ["additive", "dot"]}, ...]
nlohmann::json grid_to_json(const Grid& grid);

// The inverse of grid_to_json; throws GridError for a value that does not check.
Grid grid_from_json(const nlohmann::json& points);

}  // namespace attnbench
