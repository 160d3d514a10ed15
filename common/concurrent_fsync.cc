#include "common/concurrent_fsync.h"

#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <utility>

namespace dracpu {
namespace {

static_assert(sizeof(aio_context_t) == sizeof(uint64_t));

int FsyncErrno(int fd) { return ::fsync(fd) == 0 ? 0 : errno; }

void DestroyContext(uint64_t ctx) { ::syscall(SYS_io_destroy, ctx); }

}  // namespace

ConcurrentFsync::~ConcurrentFsync() {
  for (uint64_t ctx : idle_contexts_) DestroyContext(ctx);
}

ConcurrentFsync::Batch ConcurrentFsync::Begin() { return Batch(this, TakeContext()); }

std::vector<int> ConcurrentFsync::SyncAll(const std::vector<int>& fds) {
  if (fds.size() == 1) return {FsyncErrno(fds[0])};  // nothing to overlap
  Batch batch = Begin();
  for (int fd : fds) batch.Start(fd);
  return batch.Wait();
}

uint64_t ConcurrentFsync::TakeContext() {
  {
    std::lock_guard lock(mu_);
    if (aio_refused_) return 0;
    if (!idle_contexts_.empty()) {
      const uint64_t ctx = idle_contexts_.back();
      idle_contexts_.pop_back();
      return ctx;
    }
    if (contexts_made_ == kMaxAioContexts) return 0;
    ++contexts_made_;
  }
  aio_context_t ctx = 0;
  if (::syscall(SYS_io_setup, kAioRingSize, &ctx) == 0) return ctx;
  std::lock_guard lock(mu_);
  --contexts_made_;
  aio_refused_ = true;  // io_setup refused: the same answer every time
  return 0;
}

void ConcurrentFsync::ReturnContext(uint64_t ctx, bool usable, bool refused) {
  {
    std::lock_guard lock(mu_);
    if (refused) aio_refused_ = true;
    if (usable) {
      idle_contexts_.push_back(ctx);
      return;
    }
    --contexts_made_;
  }
  DestroyContext(ctx);  // waits for what may still be in flight on it
}

ConcurrentFsync::Batch::Batch(Batch&& other) noexcept
    : owner_(other.owner_),
      aio_ctx_(std::exchange(other.aio_ctx_, 0)),
      fds_(std::move(other.fds_)),
      errors_(std::move(other.errors_)),
      in_aio_(std::move(other.in_aio_)),
      aio_in_flight_(std::exchange(other.aio_in_flight_, 0)),
      threads_(std::move(other.threads_)),
      waited_(std::exchange(other.waited_, true)) {}

ConcurrentFsync::Batch::~Batch() { Wait(); }

void ConcurrentFsync::Batch::Start(int fd) {
  const size_t index = fds_.size();
  fds_.push_back(fd);
  errors_.push_back(0);
  in_aio_.push_back(false);
  if (aio_ctx_ != 0 && StartWithAio(index)) return;
  if (threads_.size() < kMaxThreads) {
    OnThread& t = threads_.emplace_back(OnThread{fd, 0, index, {}});
    auto sync = [](void* arg) -> void* {
      auto* job = static_cast<OnThread*>(arg);
      job->error = FsyncErrno(job->fd);
      return nullptr;
    };
    if (::pthread_create(&t.thread, nullptr, sync, &t) == 0) return;
    threads_.pop_back();
  }
  errors_[index] = FsyncErrno(fd);
}

bool ConcurrentFsync::Batch::StartWithAio(size_t index) {
  if (aio_in_flight_ == kAioRingSize && !ReapAio(1)) return false;
  iocb request{};
  request.aio_fildes = static_cast<uint32_t>(fds_[index]);
  request.aio_lio_opcode = IOCB_CMD_FSYNC;
  request.aio_data = index;
  iocb* submit[] = {&request};
  if (::syscall(SYS_io_submit, aio_ctx_, int64_t{1}, submit) == 1) {
    in_aio_[index] = true;
    ++aio_in_flight_;
    return true;
  }
  if (errno == EINVAL || errno == ENOSYS || errno == EPERM) {
    // A kernel without AIO fsync: the same answer every time. This batch goes on with threads.
    const uint64_t ctx = aio_ctx_;
    if (aio_in_flight_ == 0) {
      aio_ctx_ = 0;
      owner_->ReturnContext(ctx, true, true);
    }
  }
  // Any other refusal (a bad descriptor, say): this file's fsync(2) reports its own error.
  return false;
}

bool ConcurrentFsync::Batch::ReapAio(int64_t at_least) {
  std::array<io_event, kAioRingSize> events;
  int64_t got;
  do {
    got = ::syscall(SYS_io_getevents, aio_ctx_, at_least, static_cast<int64_t>(aio_in_flight_),
                    events.data(), nullptr);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) {
    // Not expected (the context is ours and valid). Requests may still be in flight: the context
    // goes (its destruction waits for them), and their files are synced by Wait with fsync(2).
    const uint64_t ctx = aio_ctx_;
    aio_ctx_ = 0;
    aio_in_flight_ = 0;
    owner_->ReturnContext(ctx, false, false);
    return false;
  }
  for (int64_t e = 0; e < got; ++e) {
    const size_t i = events[e].data;
    in_aio_[i] = false;
    errors_[i] = events[e].res < 0 ? static_cast<int>(-events[e].res) : 0;
  }
  aio_in_flight_ -= static_cast<size_t>(got);
  return true;
}

const std::vector<int>& ConcurrentFsync::Batch::Wait() {
  if (waited_) return errors_;
  waited_ = true;
  while (aio_ctx_ != 0 && aio_in_flight_ > 0 && ReapAio(static_cast<int64_t>(aio_in_flight_))) {
  }
  if (aio_ctx_ != 0) {
    owner_->ReturnContext(aio_ctx_, true, false);
    aio_ctx_ = 0;
  }
  for (size_t i = 0; i < fds_.size(); ++i) {
    if (in_aio_[i]) errors_[i] = FsyncErrno(fds_[i]);  // its context failed
  }
  for (OnThread& t : threads_) {
    ::pthread_join(t.thread, nullptr);
    errors_[t.index] = t.error;
  }
  threads_.clear();
  return errors_;
}

}  // namespace dracpu
