// HealthStreamer: the kubelet's DRA resource-health stream (v1alpha1 and v1 DRAResourceHealth)
// over a DeviceHealthSource, independent of gRPC (the services in health_service.h, private to
// dra-agent/kubelet/, adapt it). Each stream gets the full device list at once, again whenever it
// changes, and at least every resend interval so the kubelet's per-device timeout
// (health_check_timeout_seconds) never fires while the agent is alive. A stream checks for
// changes when Notify() says something happened, when the source's StableFor() runs out, and at
// the resend interval; it polls (poll interval) only while the source cannot tell how long its
// answer holds. So an idle, healthy node wakes a stream once per resend interval.
// The sync gRPC server cannot tell a stream that its client went until the stream next writes,
// so a dropped stream holds its server thread until the next resend. The kubelet keeps one stream
// per plugin and opens a new one when it reconnects: so at most kMaxStreams run at once, and a
// new stream beyond that ends the oldest (a client that really still reads it reconnects).
// Thread safety: any number of concurrent calls; Stop() ends every stream promptly.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "dra-agent/health/device_health.h"

namespace dracpu::dra {

struct HealthStreamOptions {
  std::chrono::milliseconds poll_interval{1000};  // when the source's StableFor() is nullopt
  std::chrono::milliseconds resend_interval{10000};
  int64_t timeout_seconds = 30;  // sent as health_check_timeout_seconds; > 2 resend intervals
};

class HealthStreamer {
 public:
  static constexpr size_t kMaxStreams = 4;

  // `source` and `clock` (when the last update went out) must outlive the streamer.
  HealthStreamer(DeviceHealthSource& source, HealthStreamOptions options, const Clock& clock)
      : source_(source), options_(options), clock_(clock) {}
  // Runs one stream until `cancelled()` (the client went) or Stop(). `send(reports)` writes one
  // update and returns false when the stream is broken (then Run returns).
  using SendFn = std::function<bool(const std::vector<DeviceHealthReport>&)>;
  void Run(const std::function<bool()>& cancelled, const SendFn& send);
  void Stop();
  // Something the health depends on changed (e.g. CPUs went offline): every stream checks now.
  void Notify();
  int64_t timeout_seconds() const { return options_.timeout_seconds; }

 private:
  DeviceHealthSource& source_;
  const HealthStreamOptions options_;
  const Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;      // guarded by mu_
  uint64_t notified_ = 0;      // guarded by mu_; bumped by Notify()
  uint64_t next_stream_ = 0;   // guarded by mu_; ids in start order
  std::deque<uint64_t> open_;  // guarded by mu_; running streams, oldest first
};

}  // namespace dracpu::dra
