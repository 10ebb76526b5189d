#include "driver/grid_json.hpp"

namespace attnbench {

nlohmann::json grid_to_json(const Grid& grid) {
  nlohmann::json points = nlohmann::json::array();
  for (const GridPoint& point : grid) {
    nlohmann::json entry = nlohmann::json::object();
    for (const auto& [field, value] : field_values(point.problem))
      if (field != "scorer") entry[field] = value;
    entry["scorers"] = point.scorers;
    points.push_back(entry);
  }
  return points;
}

Grid grid_from_json(const nlohmann::json& points) {
  std::vector<GridBlock> blocks;
  for (const nlohmann::json& entry : points) {
    GridBlock block;
    for (const std::string& field : problem_fields())
      if (field != "scorer") block.fields.emplace_back(field, entry.at(field).get<std::string>());
    std::string scorers;
    for (const nlohmann::json& name : entry.at("scorers")) {
      if (!scorers.empty()) scorers += ',';
      scorers += name.get<std::string>();
    }
    block.fields.emplace_back("scorer", scorers);
    blocks.push_back(std::move(block));
  }
  return expand(blocks, Problem{}, ',');
}

}  // namespace attnbench
