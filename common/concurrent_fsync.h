// ConcurrentFsync: the fsyncs of many files at once. A journalling filesystem serves concurrent
// fsyncs with one commit and merged cache flushes, where one after another pays a flush each.
//
// A Batch is one caller's fsyncs: Start() begins a file's fsync and returns at once, so the
// caller can go on preparing the next file while the disk works; Wait() ends them all. Two ways
// to run them, chosen when the batch begins:
//  * kAio: each fsync submitted as a kernel AIO fsync (IOCB_CMD_FSYNC, Linux 4.18); the kernel's
//    workers run them side by side, with no thread of ours (creating a thread per file cost more
//    than a tmpfs Prepare's own work on a virtual machine). A batch holds one AIO context for its
//    life. Contexts are made on first use and kept, up to kMaxAioContexts (concurrent batches):
//    destroying one waits for an RCU grace period (30-40 ms measured), so only this object's
//    destruction pays it.
//  * kThreads: each fsync on a thread of its own (up to kMaxThreads per batch, then on the
//    caller's thread in Start); where AIO is refused (an older kernel, a seccomp profile without
//    io_setup) or every context is taken.
//
// Thread safety: Begin and SyncAll may be called from any number of threads; a Batch belongs to
// the thread that uses it. The ConcurrentFsync must outlive its batches.
#pragma once

#include <pthread.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace dracpu {

class ConcurrentFsync {
 public:
  enum class Way { kAio, kThreads };
  static constexpr size_t kAioRingSize = 32;  // fsyncs in flight per AIO batch
  static constexpr size_t kMaxAioContexts = 4;
  static constexpr size_t kMaxThreads = 32;

  class Batch {
   public:
    // The moved-from batch is empty (its Wait answers nothing). Threads in flight keep their
    // slots: a deque's elements do not move with it.
    Batch(Batch&& other) noexcept;
    Batch& operator=(Batch&&) = delete;
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    ~Batch();  // waits for what is in flight when Wait was not called

    // Begins the fsync of `fd`, which must stay open until Wait returns.
    void Start(int fd);
    // Waits for every fsync started; per Start, in order, 0 or the errno of that fsync. Later
    // calls return the same answer.
    const std::vector<int>& Wait();

   private:
    friend class ConcurrentFsync;
    struct OnThread {
      int fd;
      int error;
      size_t index;  // of the Start
      pthread_t thread;
    };
    Batch(ConcurrentFsync* owner, uint64_t aio_ctx) : owner_(owner), aio_ctx_(aio_ctx) {}
    bool StartWithAio(size_t index);
    bool ReapAio(int64_t at_least);  // false: the context failed and is gone

    ConcurrentFsync* owner_;
    uint64_t aio_ctx_;  // 0: the threads way
    std::vector<int> fds_;
    std::vector<int> errors_;
    std::vector<bool> in_aio_;  // started on the AIO context, not reaped yet
    size_t aio_in_flight_ = 0;
    std::deque<OnThread> threads_;
    bool waited_ = false;
  };

  // `first`: kThreads skips AIO altogether (tests of that way).
  explicit ConcurrentFsync(Way first = Way::kAio) : aio_refused_(first == Way::kThreads) {}
  ~ConcurrentFsync();
  ConcurrentFsync(const ConcurrentFsync&) = delete;
  ConcurrentFsync& operator=(const ConcurrentFsync&) = delete;

  Batch Begin();

  // fsync of every descriptor of `fds`; per descriptor, 0 or the errno of its fsync.
  std::vector<int> SyncAll(const std::vector<int>& fds);

 private:
  uint64_t TakeContext();  // 0: none (refused, or all in use)
  void ReturnContext(uint64_t ctx, bool usable, bool refused);

  std::mutex mu_;
  std::vector<uint64_t> idle_contexts_;  // the kernel's aio_context_t values
  size_t contexts_made_ = 0;             // idle and in use
  bool aio_refused_;
};

}  // namespace dracpu
