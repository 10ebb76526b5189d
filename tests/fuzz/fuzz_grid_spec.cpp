// libFuzzer target: the grid-spec parser. The first byte picks a field (and the list
// separator), the rest is its spec, as `run --FIELD SPEC` or a scenario cell gives it.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "driver/grid.hpp"
#include "driver/value_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::vector<std::string>& fields = attnbench::problem_fields();
  const std::string& field = fields[data[0] % fields.size()];
  const char separator = (data[0] & 0x80) ? ';' : ',';
  const std::string spec(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    attnbench::parse_int_spec(spec, separator);
  } catch (const std::invalid_argument&) {
  }
  try {
    attnbench::parse_uint_spec(spec, separator);
  } catch (const std::invalid_argument&) {
  }
  try {
    attnbench::parse_scorer_spec(spec, separator);
  } catch (const std::invalid_argument&) {
  }
  try {
    // A small cap keeps each input fast; the cap's own check is what is exercised.
    const attnbench::Grid grid = attnbench::expand({attnbench::GridBlock{{{field, spec}}}}, attnbench::Problem{},
                                                   separator, 20000);
    if (grid.empty() || grid.size() > 20000) __builtin_trap();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
