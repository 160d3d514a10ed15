// Fuzz target sysfs_parsers: one input through every text parser of topology discovery (the
// CPU list and mask parsers and the sysfs attribute parsers); see sysfs_parsers_fuzz.h for the
// contracts. The seeded gtest driver sysfs_parsers_fuzz_test.cc runs the same function.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/sysfs_parsers_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dracpu::fuzz::FuzzSysfsParsers(data, size);
  return 0;
}
