#include "driver/grid_json.hpp"

#include <stdexcept>

namespace attnbench {

namespace {

// "a,b" of the JSON list ["a", "b"].
std::string comma_list(const nlohmann::json& names) {
  std::string out;
  for (const nlohmann::json& name : names) {
    if (!out.empty()) out += ',';
    out += name.get<std::string>();
  }
  return out;
}

// The settings in `object` (a grid point, or the whole meta.json of an older run) over `base`.
PointSettings settings_in(const nlohmann::json& object, PointSettings base) {
  if (object.contains("name") && object["name"].is_string() && !object["name"].get<std::string>().empty())
    set_setting(base, "name", object["name"].get<std::string>(), ',');
  if (object.contains("stages") && object["stages"].is_array())
    set_setting(base, "stages", comma_list(object["stages"]), ',');
  if (object.contains("repetitions") && object["repetitions"].is_number_integer())
    base.bench.repetitions = object["repetitions"].get<int>();
  if (object.contains("min_time_s") && object["min_time_s"].is_number()) base.bench.min_time = object["min_time_s"];
  if (object.contains("peer")) {
    const nlohmann::json& peer = object["peer"];
    if (peer.is_string()) {
      const std::string name = peer.get<std::string>();
      set_setting(base, "peer", name.empty() ? "none" : name, ',');
    }
    if (peer.is_object()) set_setting(base, "peer", peer.value("name", std::string()), ',');
    if (peer.is_null()) base.peer.clear();
  }
  return base;
}

}  // namespace

nlohmann::json grid_to_json(const Grid& grid) {
  nlohmann::json points = nlohmann::json::array();
  for (const GridPoint& point : grid) {
    nlohmann::json entry = nlohmann::json::object();
    for (const auto& [field, value] : field_values(point.problem))
      if (field != "scorer") entry[field] = value;
    entry["scorers"] = point.scorers;
    entry["name"] = point.settings.name;
    entry["stages"] = point.settings.bench.stages;
    entry["repetitions"] = point.settings.bench.repetitions;
    entry["min_time_s"] = point.settings.bench.min_time;
    entry["peer"] = point.settings.peer;
    points.push_back(entry);
  }
  return points;
}

Grid grid_from_meta(const nlohmann::json& meta) {
  const PointSettings run_wide = settings_in(meta, PointSettings{});
  Grid grid;
  std::size_t index = 0;
  for (const nlohmann::json& entry : meta.at("grid")) {
    GridBlock block;
    for (const std::string& field : problem_fields())
      if (field != "scorer") block.fields.emplace_back(field, entry.at(field).get<std::string>());
    block.fields.emplace_back("scorer", comma_list(entry.at("scorers")));
    Grid points;
    try {
      points = expand({block}, Problem{}, ',');
    } catch (const GridError& e) {
      throw GridError("", "", "meta.json: field 'grid[" + std::to_string(index) + "]." + e.field() + "': bad value '" +
                                  e.value() + "': " + e.reason());
    }
    ++index;
    for (GridPoint& point : points) {
      point.settings = settings_in(entry, run_wide);
      grid.push_back(std::move(point));
    }
  }
  return grid;
}

}  // namespace attnbench
