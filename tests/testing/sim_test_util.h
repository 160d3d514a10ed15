// Test helpers for client-against-simulator tests: temp dirs, polling with a bound.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "tests/testing/temp_dir.h"

namespace dracpu::sim::testing {

class TempDir : public dracpu::testing::TempDir {
 public:
  TempDir() : dracpu::testing::TempDir("dracpu-sim") {}
};

// Polls `done` every 5 ms for at most `limit` (generous: the bound only stops a broken test).
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace dracpu::sim::testing
