#include "common/concurrent_fsync.h"

#include <linux/aio_abi.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace dracpu {
namespace {

static_assert(sizeof(aio_context_t) == sizeof(uint64_t));

int FsyncErrno(int fd) { return ::fsync(fd) == 0 ? 0 : errno; }

}  // namespace

ConcurrentFsync::~ConcurrentFsync() {
  if (aio_ctx_ != 0) ::syscall(SYS_io_destroy, aio_ctx_);
}

std::vector<int> ConcurrentFsync::SyncAll(const std::vector<int>& fds) {
  std::vector<int> errors(fds.size(), 0);
  if (fds.size() == 1) {
    errors[0] = FsyncErrno(fds[0]);
  } else if (fds.size() > 1 && !SyncWithAio(fds, errors)) {
    SyncOnThreads(fds, errors);
  }
  return errors;
}

bool ConcurrentFsync::SyncWithAio(const std::vector<int>& fds, std::vector<int>& errors) {
  std::unique_lock lock(aio_mu_, std::try_to_lock);
  if (!lock.owns_lock() || aio_refused_) return false;
  if (aio_ctx_ == 0 && ::syscall(SYS_io_setup, kAioRingSize, &aio_ctx_) != 0) {
    aio_ctx_ = 0;
    aio_refused_ = true;
    return false;
  }
  std::vector<bool> done(fds.size(), false);
  std::vector<iocb> requests(kAioRingSize);
  std::vector<iocb*> submit(kAioRingSize);
  std::vector<io_event> events(kAioRingSize);
  for (size_t base = 0; base < fds.size(); base += kAioRingSize) {
    const size_t count = std::min(kAioRingSize, fds.size() - base);
    for (size_t k = 0; k < count; ++k) {
      requests[k] = iocb{};
      requests[k].aio_fildes = static_cast<uint32_t>(fds[base + k]);
      requests[k].aio_lio_opcode = IOCB_CMD_FSYNC;
      requests[k].aio_data = base + k;
      submit[k] = &requests[k];
    }
    const int64_t submitted =
        ::syscall(SYS_io_submit, aio_ctx_, static_cast<int64_t>(count), submit.data());
    if (submitted < 0 && base == 0 && (errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
      aio_refused_ = true;  // a kernel without AIO fsync: the same answer every time
      return false;
    }
    // A descriptor the kernel refuses stops the submission there; it and those after it are
    // synced below, where fsync(2) reports its own error.
    int64_t reaped = 0;
    while (reaped < submitted) {
      const int64_t got = ::syscall(SYS_io_getevents, aio_ctx_, int64_t{1}, submitted - reaped,
                                    events.data(), nullptr);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      for (int64_t e = 0; e < got; ++e) {
        const size_t i = events[e].data;
        done[i] = true;
        if (events[e].res < 0) errors[i] = static_cast<int>(-events[e].res);
      }
      reaped += got;
    }
    if (reaped < submitted) {
      // Not expected (the context is ours and valid). Requests may still be in flight: the
      // context goes (its destruction waits for them) so no later batch reaps their events.
      ::syscall(SYS_io_destroy, aio_ctx_);
      aio_ctx_ = 0;
      break;
    }
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!done[i]) errors[i] = FsyncErrno(fds[i]);
  }
  return true;
}

void ConcurrentFsync::SyncOnThreads(const std::vector<int>& fds, std::vector<int>& errors) {
  // Each share is every n-th file; each file's errno is written by one thread only. Where a
  // thread cannot be made, the caller's thread does that share.
  struct Share {
    const std::vector<int>* fds;
    std::vector<int>* errors;
    size_t first, stride;
  };
  auto sync_share = [](void* arg) -> void* {
    const Share& sh = *static_cast<Share*>(arg);
    for (size_t i = sh.first; i < sh.fds->size(); i += sh.stride) {
      (*sh.errors)[i] = FsyncErrno((*sh.fds)[i]);
    }
    return nullptr;
  };
  const size_t n = std::max<size_t>(1, std::min(fds.size(), kMaxThreads));
  std::vector<Share> shares;
  for (size_t k = 0; k < n; ++k) shares.push_back({&fds, &errors, k, n});
  std::vector<pthread_t> threads(n);
  std::vector<bool> started(n, false);
  for (size_t k = 1; k < n; ++k) {
    started[k] = ::pthread_create(&threads[k], nullptr, sync_share, &shares[k]) == 0;
  }
  sync_share(&shares[0]);
  for (size_t k = 1; k < n; ++k) {
    if (started[k]) {
      ::pthread_join(threads[k], nullptr);
    } else {
      sync_share(&shares[k]);
    }
  }
}

}  // namespace dracpu
