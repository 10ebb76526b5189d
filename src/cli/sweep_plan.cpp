#include "cli/sweep_plan.hpp"

#include <sstream>
#include <stdexcept>

namespace attnbench {

std::pair<int, int> parse_shard(const std::string& text) {
  int k = 0, n = 0;
  char slash = 0, extra = 0;
  std::istringstream in(text);
  if (!(in >> k >> slash >> n) || slash != '/' || (in >> extra) || k < 1 || n < 1 || k > n)
    throw std::invalid_argument("--shard: bad value '" + text + "'; expected K/N with 1 <= K <= N, e.g. 2/4");
  return {k, n};
}

}  // namespace attnbench
