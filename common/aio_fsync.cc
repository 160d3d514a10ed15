#include "common/aio_fsync.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace dracpu {

AioFsync::~AioFsync() {
  if (ctx_ != 0) ::syscall(SYS_io_destroy, ctx_);
}

bool AioFsync::Ready() {
  if (ctx_ == 0 && !refused_ && ::syscall(SYS_io_setup, kRingSize, &ctx_) != 0) {
    ctx_ = 0;
    refused_ = true;
  }
  return ctx_ != 0;
}

bool AioFsync::SyncAll(const std::vector<int>& fds, std::vector<int>& errors) {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || !Ready()) return false;
  std::vector<int> result(fds.size(), 0);
  std::vector<bool> done(fds.size(), false);
  std::vector<iocb> requests(kRingSize);
  std::vector<iocb*> submit(kRingSize);
  std::vector<io_event> events(kRingSize);
  for (size_t base = 0; base < fds.size(); base += kRingSize) {
    const size_t count = std::min(kRingSize, fds.size() - base);
    for (size_t k = 0; k < count; ++k) {
      requests[k] = iocb{};
      requests[k].aio_fildes = static_cast<uint32_t>(fds[base + k]);
      requests[k].aio_lio_opcode = IOCB_CMD_FSYNC;
      requests[k].aio_data = base + k;
      submit[k] = &requests[k];
    }
    const int64_t submitted =
        ::syscall(SYS_io_submit, ctx_, static_cast<int64_t>(count), submit.data());
    if (submitted < 0 && base == 0 && (errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
      refused_ = true;  // a kernel without AIO fsync: the same answer every time
      return false;
    }
    // A descriptor the kernel refused stops the submission there; it and those after it are
    // synced below, where fsync(2) reports its own error.
    int64_t reaped = 0;
    while (reaped < submitted) {
      const int64_t got =
          ::syscall(SYS_io_getevents, ctx_, int64_t{1}, submitted - reaped, events.data(), nullptr);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      for (int64_t e = 0; e < got; ++e) {
        const size_t i = events[e].data;
        done[i] = true;
        if (events[e].res < 0) result[i] = static_cast<int>(-events[e].res);
      }
      reaped += got;
    }
    if (reaped < submitted) {
      // Not expected (the context is ours and valid). Requests may still be in flight: the
      // context goes (its destruction waits for them) so no later batch reaps their events.
      ::syscall(SYS_io_destroy, ctx_);
      ctx_ = 0;
      break;
    }
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!done[i] && ::fsync(fds[i]) != 0) result[i] = errno;
  }
  errors = std::move(result);
  return true;
}

}  // namespace dracpu
