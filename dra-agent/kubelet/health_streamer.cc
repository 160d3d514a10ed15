#include "dra-agent/kubelet/health_streamer.h"

#include <algorithm>

namespace dracpu::dra {

void HealthStreamer::Run(const std::function<bool()>& cancelled, const SendFn& send) {
  std::vector<DeviceHealthReport> last;
  Clock::TimePoint last_sent = clock_.Now();
  bool first = true;
  std::unique_lock lock(mu_);
  const uint64_t id = next_stream_++;
  open_.push_back(id);
  if (open_.size() > kMaxStreams) {
    open_.pop_front();
    cv_.notify_all();
  }
  auto superseded = [&] { return std::find(open_.begin(), open_.end(), id) == open_.end(); };
  uint64_t seen = notified_;
  while (!stopping_ && !superseded() && !cancelled()) {
    lock.unlock();
    std::vector<DeviceHealthReport> now = source_.CurrentHealth();
    const Clock::TimePoint t = clock_.Now();
    if (first || now != last || t - last_sent >= options_.resend_interval) {
      if (!send(now)) {
        lock.lock();
        break;
      }
      last = std::move(now);
      last_sent = t;
      first = false;
    }
    const Clock::Duration wait =
        std::min<Clock::Duration>(source_.StableFor().value_or(options_.poll_interval),
                                  last_sent + options_.resend_interval - clock_.Now());
    lock.lock();
    // Woken early by Stop(), Notify() or a newer stream; the wait is on the condition variable.
    cv_.wait_for(lock, wait, [&] { return stopping_ || superseded() || notified_ != seen; });
    seen = notified_;
  }
  if (!superseded()) open_.erase(std::find(open_.begin(), open_.end(), id));
}

void HealthStreamer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void HealthStreamer::Notify() {
  {
    std::lock_guard lock(mu_);
    ++notified_;
  }
  cv_.notify_all();
}

}  // namespace dracpu::dra
