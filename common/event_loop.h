// EventLoop: an agent's single-threaded event loop: the nri-agent's NRI transport and HTTP
// server, the dra-agent's main thread (heartbeat, topology poll, signals, HTTP server). An epoll
// set of watched descriptors, one-shot timers and a queue of tasks posted from other threads
// (woken through an eventfd).
// Everything the transport does (reading the trunk, decoding frames, running ttrpc handlers,
// completing outgoing calls, timeouts) runs as a callback on this loop, so there is no thread per
// request and no lock in the transport. See docs/nri-transport.md for why epoll and not Asio or
// sd-event.
//
// Timers run on the injected Clock (common/clock.h): the epoll wait is bounded by the time left
// on that clock, so with a fake clock a test drives timers with RunOnce(0ms) and Advance().
//
// Thread safety: Post() and Stop() may be called from any thread. Everything else must be called
// on the loop thread (the thread inside Run()/RunOnce()), or before the loop runs.
// Callbacks may add and remove watches and timers, including their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace dracpu::loop {

class EventLoop {
 public:
  using IoHandler = std::function<void(uint32_t epoll_events)>;
  using Task = std::function<void()>;
  using WatchId = uint64_t;
  using TimerId = uint64_t;

  // Creates the epoll set and the wake-up eventfd; errors come from the kernel (EMFILE, ENOMEM).
  // `clock` (the timers' time) must outlive the loop.
  static Result<std::unique_ptr<EventLoop>> Create(const Clock& clock);

  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;
  ~EventLoop();

  // Watches `fd` (not owned; the caller keeps it open until Unwatch) for `epoll_events`
  // (EPOLLIN, EPOLLOUT, ...; level-triggered). The handler gets the events that fired.
  Result<WatchId> Watch(int fd, uint32_t epoll_events, IoHandler handler);
  Status Modify(WatchId id, uint32_t epoll_events);
  // Stops watching; the handler is not called again, even for events already collected.
  // Unknown ids are ignored.
  void Unwatch(WatchId id);

  // Runs `task` once, `delay` from now, on the loop thread. Returns an id for CancelTimer.
  TimerId AddTimer(std::chrono::nanoseconds delay, Task task);
  // Cancels a pending timer; ids that already ran or are unknown are ignored.
  void CancelTimer(TimerId id);

  // Thread-safe: queues `task` to run on the loop thread in the next iteration.
  void Post(Task task);

  // One iteration: waits for I/O up to `max_wait` (or until the next timer; forever when
  // nullopt and nothing is scheduled), then runs I/O handlers, due timers and posted tasks.
  Status RunOnce(std::optional<std::chrono::milliseconds> max_wait);
  // Iterates until Stop(). Returns an error only if epoll_wait itself fails.
  Status Run();
  // Thread-safe: makes Run() return after the current iteration. Timers that fall due in that
  // iteration after the stop was requested do not run (they stay queued); posted tasks do.
  void Stop();

  size_t watch_count() const { return watches_.size(); }
  size_t timer_count() const { return timers_.size(); }

 private:
  EventLoop(const Clock& clock, UniqueFd epoll_fd, UniqueFd wake_fd);
  void DrainWakeFd();
  void RunDueTimers();
  bool stop_requested();
  void RunPostedTasks();

  struct Watched {
    int fd;
    std::shared_ptr<IoHandler> handler;  // shared: a handler may Unwatch itself while running
  };

  const Clock& clock_;
  UniqueFd epoll_fd_;
  UniqueFd wake_fd_;
  WatchId next_watch_id_ = 1;  // 0 is the wake-up eventfd
  std::unordered_map<WatchId, Watched> watches_;
  TimerId next_timer_id_ = 1;
  std::map<std::pair<Clock::TimePoint, TimerId>, Task> timers_;
  std::unordered_map<TimerId, Clock::TimePoint> timer_deadlines_;

  std::mutex posted_mu_;
  std::vector<Task> posted_;     // guarded by posted_mu_
  bool stop_requested_ = false;  // guarded by posted_mu_
};

}  // namespace dracpu::loop
