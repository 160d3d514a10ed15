// Where the shared reference material (../shared: sysfs corpus, allocation cases) is, for tests.
// CI has it beside the checkout, read-only. When it is absent, tests that need it skip with a
// message saying so (DRACPU_REQUIRE_SHARED_DIR), never fail and never pass silently.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tests/testing/sysfs_fixture.h"

namespace dracpu::testing {

// $DRACPU_SHARED_DIR (set by meson for every test), when it names a directory.
inline std::optional<std::string> SharedDir() {
  const char* dir = std::getenv("DRACPU_SHARED_DIR");
  struct stat st;
  if (dir == nullptr || ::stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return std::string(dir);
}

// The corpus machines as the parameters of a TEST_P suite, or one placeholder when ../shared is
// absent (its test then skips with DRACPU_REQUIRE_SHARED_DIR).
inline std::vector<std::string> CorpusMachineParams() {
  const std::optional<std::string> shared = SharedDir();
  if (!shared) return {"(no ../shared)"};
  return CorpusMachines(*shared);
}

// The gtest name of a machine parameter ("intel-skylake" -> "intel_skylake").
inline std::string CorpusParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

}  // namespace dracpu::testing

// In a TEST body: binds `var` to the shared directory, or skips the test with a message.
#define DRACPU_REQUIRE_SHARED_DIR(var)                                                      \
  const std::optional<std::string> var##_opt = ::dracpu::testing::SharedDir();              \
  if (!var##_opt) {                                                                         \
    GTEST_SKIP() << "../shared (DRACPU_SHARED_DIR) is absent: reference-data test skipped"; \
  }                                                                                         \
  const std::string& var = *var##_opt
