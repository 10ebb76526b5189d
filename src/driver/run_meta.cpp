#include "driver/run_meta.hpp"

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>

#include "core/fused_kernels.hpp"
#include "core/fused_projection.hpp"
#include "core/onednn_context.hpp"
#include "driver/run_journal.hpp"

namespace attnbench {

namespace {

// The value of the first /proc/cpuinfo line that starts with `key` (e.g. "model name"), or "".
std::string cpuinfo_value(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0 && line.find(':') != std::string::npos) {
      const std::size_t colon = line.find(':');
      return line.substr(std::min(line.size(), colon + 2));
    }
  return "";
}

std::string cpu_model() {
  const std::string model = cpuinfo_value("model name");
  return model.empty() ? "unknown" : model;
}

// "AuthenticAMD family 25 model 17 stepping 1": tells apart CPUs that a VM names alike
// ("AMD EPYC" for a Zen 4 and a Zen 5); "unknown" without x86's cpuinfo fields.
std::string cpu_id() {
  const std::string vendor = cpuinfo_value("vendor_id"), family = cpuinfo_value("cpu family"),
                    model = cpuinfo_value("model\t"), stepping = cpuinfo_value("stepping");
  if (vendor.empty() || family.empty() || model.empty()) return "unknown";
  return vendor + " family " + family + " model " + model + (stepping.empty() ? "" : " stepping " + stepping);
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
}

// `git rev-parse HEAD` of the source tree this binary was built from, "+dirty" when it has changes.
std::string git_commit() {
  const std::string git = "git -C '" + std::string(ATTNBENCH_SOURCE_DIR) + "' ";
  const auto run = [](const std::string& command) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>/dev/null").c_str(), "r"), pclose);
    if (!pipe) return out;
    std::array<char, 256> buffer{};
    while (fgets(buffer.data(), buffer.size(), pipe.get())) out += buffer.data();
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  };
  std::string commit = run(git + "rev-parse HEAD");
  if (commit.empty()) return "unknown";
  if (!run(git + "status --porcelain --untracked-files=no").empty()) commit += "+dirty";
  return commit;
}

}  // namespace

std::string utc_now() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

nlohmann::json build_and_machine() {
  const auto& cpu = benchmark::CPUInfo::Get();
  return {
      {"tool", "attnbench"},
      {"version", ATTNBENCH_VERSION},
      {"git_commit", git_commit()},
      {"host", host_name()},
      {"cpu_model", cpu_model()},
      {"cpu_id", cpu_id()},
      {"cores", std::thread::hardware_concurrency()},
      {"cpu_mhz", cpu.cycles_per_second / 1e6},
      {"cpu_frequency_scaling", cpu.scaling == benchmark::CPUInfo::ENABLED ? "enabled"
                                : cpu.scaling == benchmark::CPUInfo::DISABLED ? "disabled"
                                                                              : "unknown"},
      {"onednn_version", onednn_version()},
      {"onednn_isa", effective_isa_name()},
      {"fused_loops", fused::loops_name()},
      {"fused_bf16_query", fused_bf16_query_name()},
      {"openmp", "GNU libgomp, OpenMP " + std::to_string(_OPENMP)},
      {"compiler", ATTNBENCH_COMPILER},
      {"compiler_flags", ATTNBENCH_COMPILER_FLAGS},
      {"build_type", ATTNBENCH_BUILD_TYPE},
  };
}

std::vector<std::string> timing_warnings(const nlohmann::json& machine) {
  std::vector<std::string> warnings;
  if (machine.value("cpu_frequency_scaling", "") != "disabled")
    warnings.push_back("CPU frequency scaling is " + machine.value("cpu_frequency_scaling", std::string("unknown")) +
                       " (governor not fixed): timings may drift; compare medians and ratios within one run");
  if (machine.value("build_type", "") != "Release")
    warnings.push_back("this is a " + machine.value("build_type", std::string("unknown")) +
                       " build, not Release: timings do not represent the tool");
  return warnings;
}

std::string sha256_of_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return sha256_hex(bytes);
}

std::string resume_mismatch(const nlohmann::json& resumed, const nlohmann::json& here) {
  const nlohmann::json& then = resumed.contains("build") ? resumed["build"] : resumed;
  // A field that is missing or not a string reads as "?" (a damaged meta.json is a mismatch).
  const auto text = [](const nlohmann::json& meta, const char* field) {
    return meta.is_object() && meta.contains(field) && meta[field].is_string() ? meta[field].get<std::string>()
                                                                                 : std::string("?");
  };
  std::string why;
  for (const char* field : {"host", "onednn_version", "git_commit", "fused_loops", "fused_bf16_query"}) {
    const std::string a = text(then, field), b = text(here, field);
    if (a != b) why += (why.empty() ? "" : "; ") + std::string(field) + " was " + a + ", now " + b;
  }
  return why;
}

}  // namespace attnbench
