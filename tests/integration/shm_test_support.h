// Helpers for the cross-process shared-memory tests: self-checking claim contents (so a reader
// can tell a torn record from a whole one), running processes, running the dracpu-shm tool.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "shm-schema/records.h"
#include "tests/testing/shm_test_util.h"

namespace dracpu::shm::testing {

// Claims below this key keep the same CPUs at every version (other fields still change).
inline constexpr int kStableCpuClaims = 8;

// Claim k at version v: every field derives from (k, v), so any mix of two versions is detected.
inline ClaimSpec PatternClaim(int k, uint64_t v) {
  ClaimSpec c;
  c.uid = Uid(k);
  c.namespace_ = "ns-" + std::to_string(k);
  c.name = "c" + std::to_string(k) + "-v" + std::to_string(v);
  c.state = v % 3 == 0 ? ClaimState::kReserved : ClaimState::kPrepared;
  c.prepared_time_ns = v;  // v > 0: 0 would mean "now"
  c.request_names = {"r" + std::to_string(v), "k" + std::to_string(k)};
  c.cpus = CpuSet{2 * k};
  if (k < kStableCpuClaims) {
    c.cpus.Set(2 * k + 1);  // CPUs independent of the version: containers can pin to them
  } else {
    if (v % 2 == 1) c.cpus.Set(2 * k + 1);
    c.cpus.Set(1000 + 100 * k + static_cast<int>(v % 100));  // disjoint across k < 64
  }
  c.mems = {static_cast<int>(v % 8)};
  return c;
}

// "" when `e` is exactly PatternClaim(k, v) for its own k and v, else what differs.
inline std::string CheckPattern(const ClaimEntry& e, int k) {
  const Status st = CheckClaimEntry(e);
  if (!st.ok()) return "record check: " + st.message();
  Result<ClaimEntry> want = EncodeClaim(PatternClaim(k, e.prepared_time_ns));
  if (!want.ok()) return want.status().ToString();
  ClaimEntry w = *want;
  w.checksum = e.checksum;
  if (std::memcmp(&w, &e, sizeof e) != 0) {
    return "claim " + std::string(e.Uid()) + " version " + std::to_string(e.prepared_time_ns) +
           " does not match its pattern (name " + std::string(e.Name()) + ")";
  }
  return "";
}

// A small anonymous MAP_SHARED block that survives fork, for counters and stop flags.
template <typename T>
T* SharedBlock() {
  void* p = ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : new (p) T();
}

// Kills and reaps a forked child when a test fails before reaping it (an ASSERT returning early
// must not leave a process holding the test's output pipe).
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  // Waits for the child; returns its wait status.
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

struct ToolResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string ToolPath() {
  const char* dir = std::getenv("DRACPU_BUILD_DIR");
  return std::string(dir ? dir : ".") + "/shm-schema/dracpu-shm";
}

// Runs dracpu-shm with `args` (fork/exec), capturing stdout and stderr.
inline ToolResult RunTool(const std::vector<std::string>& args) {
  int out[2], err[2];
  ToolResult r;
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return r;
  const std::string tool = ToolPath();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(tool.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execv(tool.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, 30000) <= 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline bool SanitizerBuild() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

}  // namespace dracpu::shm::testing
