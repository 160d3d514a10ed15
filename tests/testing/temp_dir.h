// TempDir: the one temporary-directory helper of the tests and benchmarks. A fresh directory
// made with mkdtemp, removed with everything in it on destruction. Paths stay short so unix
// sockets inside it fit in 107 bytes.
//
// A test cannot go on without its directory, so a failed mkdtemp aborts with the reason
// (this header does not depend on GoogleTest; benchmarks use it too).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace dracpu::testing {

class TempDir {
 public:
  // kTmpfs: on /dev/shm when it is writable (like the real shared-memory tmpfs), else /tmp.
  enum class Base { kTmp, kTmpfs };

  explicit TempDir(std::string_view prefix = "dracpu", Base base = Base::kTmp) {
    const bool tmpfs = base == Base::kTmpfs && ::access("/dev/shm", W_OK) == 0;
    std::string tmpl = std::string(tmpfs ? "/dev/shm/" : "/tmp/") + std::string(prefix) + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::fprintf(stderr, "mkdtemp %s: %s\n", tmpl.c_str(), std::strerror(errno));
      std::abort();
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // The path of `rel` inside the directory (nothing is created).
  std::string File(const std::string& rel) const { return path_ + "/" + rel; }
  // Writes `content` to `rel` (parent directories created), beside and renamed into place as
  // the kubelet rotates projected files. Returns the path.
  std::string Write(const std::string& rel, const std::string& content) const {
    const std::string p = File(rel);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    { std::ofstream(p + ".tmp") << content; }
    std::filesystem::rename(p + ".tmp", p);
    return p;
  }

 private:
  std::string path_;
};

}  // namespace dracpu::testing
