// One fuzz input through every text parser of topology discovery: CpuSet::ParseList/ParseMask,
// the sysfs attribute parsers, and the parsers' contracts (an OK list re-prints and re-parses to
// the same set; an error is non-OK with a message naming the input). Aborts on a broken
// contract, so both libFuzzer (tests/fuzz/sysfs_parsers_libfuzzer.cc, clang only) and the
// seeded gtest driver (sysfs_parsers_fuzz_test.cc) catch it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dracpu::fuzz {

void FuzzSysfsParsers(const uint8_t* data, size_t size);

}  // namespace dracpu::fuzz
