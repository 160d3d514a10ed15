// libFuzzer entry point (built only when the compiler is clang; see tests/fuzz/meson.build).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/sysfs_parsers_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dracpu::fuzz::FuzzSysfsParsers(data, size);
  return 0;
}
