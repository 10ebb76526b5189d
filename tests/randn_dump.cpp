// Test-only: prints the raw draws of TorchGenerator::randn, one value per line at
// %.9g (round-trips float32), for tests/torch_randn_exact.py.
// Usage: randn_dump SEED N1 [N2 ...]: seeds once, then draws randn(N1), randn(N2), ...
// in order on the same generator, printing each call's values.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/random.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: randn_dump SEED N1 [N2 ...]\n");
    return 2;
  }
  attnbench::TorchGenerator generator(std::strtoull(argv[1], nullptr, 10));
  for (int a = 2; a < argc; ++a) {
    std::vector<float> values(std::strtoull(argv[a], nullptr, 10));
    generator.randn(values);
    for (float v : values) std::printf("%.9g\n", static_cast<double>(v));
  }
  return 0;
}
