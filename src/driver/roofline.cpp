#include "driver/roofline.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace attnbench {

namespace {
double intensity_of(const StageCost& cost) {
  return cost.bytes > 0 ? cost.flops / cost.bytes : std::numeric_limits<double>::infinity();
}
}  // namespace

double Roofline::percent(int threads, DType dtype, const StageCost& cost, double ns) const {
  const auto found = by_threads.find(threads);
  if (found == by_threads.end() || ns <= 0) return std::numeric_limits<double>::quiet_NaN();
  const std::optional<double> compute = found->second.compute_gflops(dtype);
  if (!compute) return std::numeric_limits<double>::quiet_NaN();
  const double attainable = std::min(*compute, intensity_of(cost) * found->second.gbps);
  return 100.0 * (cost.flops / ns) / attainable;
}

std::string Roofline::bound(int threads, DType dtype, const StageCost& cost) const {
  const auto found = by_threads.find(threads);
  if (found == by_threads.end()) return "";
  const std::optional<double> compute = found->second.compute_gflops(dtype);
  if (!compute) return "";
  return intensity_of(cost) * found->second.gbps < *compute ? "memory" : "compute";
}

std::optional<Roofline> load_roofline(const std::filesystem::path& machine_json) {
  std::ifstream in(machine_json);
  if (!in) return std::nullopt;
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    Roofline roofline;
    for (const auto& [threads, entry] : doc.at("threads").items()) {
      Peak peak{entry.at("f32_gflops").get<double>(), entry.at("gbps").get<double>(), std::nullopt};
      if (entry.contains("bf16_gflops") && !entry["bf16_gflops"].is_null())
        peak.bf16_gflops = entry["bf16_gflops"].get<double>();
      roofline.by_threads[std::stoi(threads)] = peak;
    }
    return roofline;
  } catch (const std::exception& e) {
    throw std::invalid_argument(machine_json.string() + ": not a roofline file (" + e.what() + ")");
  }
}

}  // namespace attnbench
