#include "tests/fuzz/fuzz_check.h"

#include <cstdio>
#include <cstdlib>

namespace dracpu::fuzz {

void Broken(std::string_view what, std::string_view input) {
  std::fprintf(stderr, "fuzz contract broken: %.*s (on a %zu-byte input)\n",
               static_cast<int>(what.size()), what.data(), input.size());
  std::abort();
}

}  // namespace dracpu::fuzz
