// ConcurrentFsync: the fsyncs of many files at once. A journalling filesystem serves concurrent
// fsyncs with one commit and merged cache flushes, where one after another pays a flush each.
//
// Two ways, the first that can take a batch:
//  * kAio: the batch submitted as kernel AIO fsyncs (IOCB_CMD_FSYNC, Linux 4.18) in one
//    io_submit; the kernel's workers run them side by side, with no thread of ours (creating a
//    thread per file cost more than a tmpfs Prepare's own work on a virtual machine). The AIO
//    context is made on first use and kept: destroying one waits for an RCU grace period
//    (30-40 ms measured), so only this object's destruction pays it. One batch at a time: a
//    caller that finds one in progress takes the other way rather than wait.
//  * kThreads: each file's fsync on a thread of its own (up to kMaxThreads, then in turns); where
//    AIO is refused (an older kernel, a seccomp profile without io_setup) or busy.
//
// Thread safety: SyncAll may be called from any number of threads.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace dracpu {

class ConcurrentFsync {
 public:
  enum class Way { kAio, kThreads };
  static constexpr size_t kAioRingSize = 32;
  static constexpr size_t kMaxThreads = 32;

  // `first`: kThreads skips AIO altogether (tests of that way).
  explicit ConcurrentFsync(Way first = Way::kAio) : aio_refused_(first == Way::kThreads) {}
  ~ConcurrentFsync();
  ConcurrentFsync(const ConcurrentFsync&) = delete;
  ConcurrentFsync& operator=(const ConcurrentFsync&) = delete;

  // fsync of every descriptor of `fds`; per descriptor, 0 or the errno of its fsync.
  std::vector<int> SyncAll(const std::vector<int>& fds);

 private:
  // False, with `errors` untouched, when AIO cannot take the batch.
  bool SyncWithAio(const std::vector<int>& fds, std::vector<int>& errors);
  static void SyncOnThreads(const std::vector<int>& fds, std::vector<int>& errors);

  std::mutex aio_mu_;
  uint64_t aio_ctx_ = 0;  // the kernel's aio_context_t; 0: not made yet (or gone after a failure)
  bool aio_refused_;
};

}  // namespace dracpu
