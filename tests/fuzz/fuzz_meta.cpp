// libFuzzer target: the meta.json reader. Whatever parses as JSON goes through the field
// checks of a submitted run (check_slurm_run_meta) and of a run (check_run_meta) and, when
// the latter pass, grid_from_meta and resume_mismatch: only std::invalid_argument may come out.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "driver/grid_json.hpp"
#include "driver/meta_check.hpp"
#include "driver/run_meta.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json meta = nlohmann::json::parse(data, data + size, nullptr, false);
  if (meta.is_discarded()) return 0;
  try {
    attnbench::check_slurm_run_meta(meta, "meta.json");
  } catch (const std::invalid_argument&) {
  }
  try {
    attnbench::check_run_meta(meta, "meta.json");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  try {
    const attnbench::Grid grid = attnbench::grid_from_meta(meta);
    (void)grid;
  } catch (const std::invalid_argument&) {
  }
  (void)attnbench::resume_mismatch(meta, nlohmann::json::object());
  return 0;
}
