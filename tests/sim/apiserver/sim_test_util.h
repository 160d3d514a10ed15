// Test helpers for client-against-simulator tests: temp dirs, polling with a bound.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace dracpu::sim::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dracpu-sim-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& rel, const std::string& content) const {
    const std::string p = path_ + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    // Written beside and renamed, as the kubelet rotates projected tokens.
    { std::ofstream(p + ".tmp") << content; }
    std::filesystem::rename(p + ".tmp", p);
    return p;
  }

 private:
  std::string path_;
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
