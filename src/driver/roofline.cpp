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

std::string Roofline::memory_level(int threads, double working_set) const {
  const auto found = by_threads.find(threads);
  if (found == by_threads.end()) return "";
  const Peak& peak = found->second;
  if (peak.l2_gbps && l2_bytes > 0 && working_set <= threads * l2_bytes) return "L2";
  const double l3_fit = peak.l3_fit_bytes.value_or(l3_bytes);
  if (peak.l3_gbps && l3_fit > 0 && working_set <= l3_fit) return "L3";
  return peak.read_gbps ? "DRAM" : "triad";
}

std::optional<double> Roofline::memory_gbps(int threads, double working_set) const {
  const std::string level = memory_level(threads, working_set);
  if (level.empty()) return std::nullopt;
  const Peak& peak = by_threads.at(threads);
  if (level == "L2") return peak.l2_gbps;
  if (level == "L3") return peak.l3_gbps;
  if (level == "DRAM") return peak.read_gbps;
  return peak.gbps;
}

double Roofline::percent(int threads, DType dtype, const StageCost& cost, double ns) const {
  const auto found = by_threads.find(threads);
  if (found == by_threads.end() || ns <= 0) return std::numeric_limits<double>::quiet_NaN();
  const std::optional<double> compute = found->second.compute_gflops(dtype);
  if (!compute) return std::numeric_limits<double>::quiet_NaN();
  const double attainable = std::min(*compute, intensity_of(cost) * *memory_gbps(threads, cost.bytes));
  return 100.0 * (cost.flops / ns) / attainable;
}

std::string Roofline::bound(int threads, DType dtype, const StageCost& cost) const {
  const auto found = by_threads.find(threads);
  if (found == by_threads.end()) return "";
  const std::optional<double> compute = found->second.compute_gflops(dtype);
  if (!compute) return "";
  return intensity_of(cost) * *memory_gbps(threads, cost.bytes) < *compute ? "memory" : "compute";
}

std::string roofline_machine_mismatch(const Roofline& roofline, const std::string& file, const nlohmann::json& machine) {
  const auto describe = [](const nlohmann::json& of) {
    std::string text;
    for (const char* key : {"cpu_model", "cpu_id", "cores"})
      if (of.contains(key)) text += (text.empty() ? "" : ", ") + (of[key].is_string() ? of[key].get<std::string>() : of[key].dump());
    return text;
  };
  for (const auto& item : roofline.measured_on.items())
    if (!machine.contains(item.key()) || machine[item.key()] != item.value())
      return file + " was measured on " + describe(roofline.measured_on) + ", this is " + describe(machine) +
             ": roofline_pct and bound are against another machine's roofs; run `attnbench roofline` here";
  return "";
}

std::optional<Roofline> load_roofline(const std::filesystem::path& machine_json) {
  std::ifstream in(machine_json);
  if (!in) return std::nullopt;
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    Roofline roofline;
    for (const auto& item : doc.at("threads").items()) {
      const nlohmann::json& entry = item.value();  // not a structured binding: clang 14 cannot capture one
      Peak peak;
      peak.gflops = entry.at("f32_gflops").get<double>();
      peak.gbps = entry.at("gbps").get<double>();
      const auto optional_number = [&](const char* key) {
        return entry.contains(key) && !entry[key].is_null() ? std::optional<double>(entry[key].get<double>())
                                                            : std::nullopt;
      };
      peak.bf16_gflops = optional_number("bf16_gflops");
      peak.read_gbps = optional_number("read_gbps");
      peak.l2_gbps = optional_number("l2_gbps");
      peak.l3_gbps = optional_number("l3_gbps");
      peak.l3_fit_bytes = optional_number("l3_fit_bytes");
      roofline.by_threads[std::stoi(item.key())] = peak;
    }
    for (const char* key : {"cpu_model", "cpu_id", "cores"})
      if (doc.contains(key)) roofline.measured_on[key] = doc[key];
    if (doc.contains("caches")) {
      roofline.l2_bytes = doc["caches"].value("l2_bytes", 0.0);
      roofline.l3_bytes = doc["caches"].value("l3_bytes", 0.0);
    }
    return roofline;
  } catch (const std::exception& e) {
    throw std::invalid_argument(machine_json.string() + ": not a roofline file (" + e.what() + ")");
  }
}

}  // namespace attnbench
