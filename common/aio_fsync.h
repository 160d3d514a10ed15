// AioFsync: the fsyncs of many files at once, submitted together as kernel AIO fsyncs
// (IOCB_CMD_FSYNC, Linux 4.18), which the kernel's workers run side by side. A journalling
// filesystem then serves them with one commit, as it does concurrent fsyncs from many threads,
// without a thread of ours per file (creating those cost more than a tmpfs Prepare's own work on
// a virtual machine).
//
// The AIO context is made on first use and kept: destroying one waits for an RCU grace period
// (30-40 ms measured), so it is destroyed only with this object.
//
// Thread safety: one batch at a time; a caller that finds a batch in progress is told to sync
// its files another way rather than wait (SyncAll returns false).
#pragma once

#include <linux/aio_abi.h>

#include <mutex>
#include <vector>

namespace dracpu {

class AioFsync {
 public:
  // At most this many fsyncs in flight; a larger batch goes in turns.
  static constexpr size_t kRingSize = 32;

  AioFsync() = default;
  ~AioFsync();
  AioFsync(const AioFsync&) = delete;
  AioFsync& operator=(const AioFsync&) = delete;

  // fsync of every descriptor of `fds`; `errors` gets, per descriptor, 0 or the errno of its
  // fsync. False, with `errors` untouched, when AIO cannot take the batch: refused by the kernel
  // or a seccomp profile (then for good), or another batch in progress. Descriptors the ring
  // does not take are synced here with fsync(2).
  bool SyncAll(const std::vector<int>& fds, std::vector<int>& errors);

 private:
  // The context, made on first use; false when AIO is refused.
  bool Ready();

  std::mutex mu_;
  aio_context_t ctx_ = 0;
  bool refused_ = false;
};

}  // namespace dracpu
