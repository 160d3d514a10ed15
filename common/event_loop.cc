#include "common/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace dracpu::loop {

namespace {
constexpr uint64_t kWakeToken = 0;
}  // namespace

Result<std::unique_ptr<EventLoop>> EventLoop::Create(const Clock& clock) {
  UniqueFd epoll_fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd) return ErrnoStatus("epoll_create1", errno);
  UniqueFd wake_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd) return ErrnoStatus("eventfd", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeToken;
  if (::epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, wake_fd.get(), &ev) != 0) {
    return ErrnoStatus("epoll_ctl(ADD eventfd)", errno);
  }
  return std::unique_ptr<EventLoop>(new EventLoop(clock, std::move(epoll_fd), std::move(wake_fd)));
}

EventLoop::EventLoop(const Clock& clock, UniqueFd epoll_fd, UniqueFd wake_fd)
    : clock_(clock), epoll_fd_(std::move(epoll_fd)), wake_fd_(std::move(wake_fd)) {}

EventLoop::~EventLoop() = default;

Result<EventLoop::WatchId> EventLoop::Watch(int fd, uint32_t epoll_events, IoHandler handler) {
  const WatchId id = next_watch_id_++;
  epoll_event ev{};
  ev.events = epoll_events;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return ErrnoStatus("epoll_ctl(ADD fd " + std::to_string(fd) + ")", errno);
  }
  watches_.emplace(id, Watched{fd, std::make_shared<IoHandler>(std::move(handler))});
  return id;
}

Status EventLoop::Modify(WatchId id, uint32_t epoll_events) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return NotFoundError("watch " + std::to_string(id));
  epoll_event ev{};
  ev.events = epoll_events;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, it->second.fd, &ev) != 0) {
    return ErrnoStatus("epoll_ctl(MOD fd " + std::to_string(it->second.fd) + ")", errno);
  }
  return Status::Ok();
}

void EventLoop::Unwatch(WatchId id) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  // The fd may already be closed by its owner (then the kernel dropped it from the set); the
  // result does not matter either way.
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, it->second.fd, nullptr);
  watches_.erase(it);
}

EventLoop::TimerId EventLoop::AddTimer(std::chrono::nanoseconds delay, Task task) {
  const TimerId id = next_timer_id_++;
  const Clock::TimePoint when = clock_.Now() + delay;
  timers_.emplace(std::make_pair(when, id), std::move(task));
  timer_deadlines_.emplace(id, when);
  return id;
}

void EventLoop::CancelTimer(TimerId id) {
  auto it = timer_deadlines_.find(id);
  if (it == timer_deadlines_.end()) return;
  timers_.erase(std::make_pair(it->second, id));
  timer_deadlines_.erase(it);
}

void EventLoop::Post(Task task) {
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    posted_.push_back(std::move(task));
  }
  const uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the loop will wake anyway.
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
}

void EventLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    stop_requested_ = true;
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
}

bool EventLoop::stop_requested() {
  std::lock_guard<std::mutex> lock(posted_mu_);
  return stop_requested_;
}

void EventLoop::DrainWakeFd() {
  uint64_t value;
  [[maybe_unused]] ssize_t n = ::read(wake_fd_.get(), &value, sizeof(value));
}

Status EventLoop::RunOnce(std::optional<std::chrono::milliseconds> max_wait) {
  int timeout_ms = -1;
  if (max_wait) timeout_ms = static_cast<int>(max_wait->count());
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    if (!posted_.empty()) timeout_ms = 0;
  }
  if (!timers_.empty() && timeout_ms != 0) {
    const auto until = timers_.begin()->first.first - clock_.Now();
    // Round up so a timer is never polled for just before its deadline.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until).count();
    const int timer_ms = ms < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms, 1 << 30));
    timeout_ms = timeout_ms < 0 ? timer_ms : std::min(timeout_ms, timer_ms);
  }

  std::array<epoll_event, 64> events;
  const int n =
      ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
  if (n < 0 && errno != EINTR) return ErrnoStatus("epoll_wait", errno);
  for (int i = 0; i < n; ++i) {
    const uint64_t token = events[i].data.u64;
    if (token == kWakeToken) {
      DrainWakeFd();
      continue;
    }
    // Looked up per event: an earlier handler in this batch may have removed this watch.
    auto it = watches_.find(token);
    if (it == watches_.end()) continue;
    std::shared_ptr<IoHandler> handler = it->second.handler;
    (*handler)(events[i].events);
  }
  // A stop (a SIGTERM's fd, another thread) wins over timers that fell due meanwhile: with a
  // stop and a heartbeat ready together, the heartbeat must not run after the stop was seen.
  // They stay queued for a later Run().
  if (!stop_requested()) RunDueTimers();
  RunPostedTasks();
  return Status::Ok();
}

void EventLoop::RunDueTimers() {
  const Clock::TimePoint now = clock_.Now();
  // Only timers due now; a timer added by a running timer waits for the next iteration.
  while (!timers_.empty() && timers_.begin()->first.first <= now) {
    auto node = timers_.extract(timers_.begin());
    timer_deadlines_.erase(node.key().second);
    node.mapped()();
  }
}

void EventLoop::RunPostedTasks() {
  std::vector<Task> tasks;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    tasks.swap(posted_);
  }
  for (Task& task : tasks) task();
}

Status EventLoop::Run() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(posted_mu_);
      if (stop_requested_) {
        stop_requested_ = false;
        return Status::Ok();
      }
    }
    RETURN_IF_ERROR(RunOnce(std::nullopt));
  }
}

}  // namespace dracpu::loop
