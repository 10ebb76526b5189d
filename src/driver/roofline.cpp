#include "driver/roofline.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace attnbench {

double Roofline::percent(int threads, const StageCost& cost, double ns) const {
  const auto found = by_threads.find(threads);
  if (found == by_threads.end() || ns <= 0) return std::numeric_limits<double>::quiet_NaN();
  const Peak& peak = found->second;
  const double intensity = cost.bytes > 0 ? cost.flops / cost.bytes : std::numeric_limits<double>::infinity();
  const double attainable = std::min(peak.gflops, intensity * peak.gbps);
  return 100.0 * (cost.flops / ns) / attainable;
}

std::optional<Roofline> load_roofline(const std::filesystem::path& machine_json) {
  std::ifstream in(machine_json);
  if (!in) return std::nullopt;
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    Roofline roofline;
    for (const auto& [threads, peak] : doc.at("threads").items())
      roofline.by_threads[std::stoi(threads)] = {peak.at("f32_gflops").get<double>(), peak.at("gbps").get<double>()};
    return roofline;
  } catch (const std::exception& e) {
    throw std::invalid_argument(machine_json.string() + ": not a roofline file (" + e.what() + ")");
  }
}

}  // namespace attnbench
