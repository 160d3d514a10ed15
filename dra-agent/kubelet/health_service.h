// The kubelet's DRA resource-health stream (v1alpha1 and v1 DRAResourceHealth) over a
// DeviceHealthSource. Each stream gets the full device list at once, again whenever it changes,
// and at least every resend interval so the kubelet's per-device timeout
// (health_check_timeout_seconds) never fires while the agent is alive. A stream checks for
// changes when Notify() says something happened, when the source's StableFor() runs out, and at
// the resend interval; it polls (poll interval) only while the source cannot tell how long its
// answer holds. So an idle, healthy node wakes a stream once per resend interval.
// Thread safety: any number of concurrent streams; Stop() ends them all promptly.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "dra-agent/prepare/device_health.h"
#include "dra_health_v1.grpc.pb.h"
#include "dra_health_v1alpha1.grpc.pb.h"

namespace dracpu::dra {

struct HealthStreamOptions {
  std::chrono::milliseconds poll_interval{1000};  // when the source's StableFor() is nullopt
  std::chrono::milliseconds resend_interval{10000};
  int64_t timeout_seconds = 30;  // sent as health_check_timeout_seconds; > 2 resend intervals
};

// Shared by both versions' services: runs one stream until the client goes or Stop().
class HealthStreamer {
 public:
  HealthStreamer(DeviceHealthSource& source, HealthStreamOptions options)
      : source_(source), options_(options) {}
  // `send(reports)` writes one update; returns false when the stream is broken.
  template <typename SendFn>
  void Run(grpc::ServerContext* context, SendFn send);
  void Stop();
  // Something the health depends on changed (e.g. CPUs went offline): every stream checks now.
  void Notify();
  int64_t timeout_seconds() const { return options_.timeout_seconds; }

 private:
  DeviceHealthSource& source_;
  const HealthStreamOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  uint64_t notified_ = 0;  // guarded by mu_; bumped by Notify()
};

template <typename Proto>
class HealthService final : public Proto::DRAResourceHealth::Service {
 public:
  explicit HealthService(HealthStreamer& streamer) : streamer_(streamer) {}
  grpc::Status NodeWatchResources(
      grpc::ServerContext* context, const typename Proto::NodeWatchResourcesRequest*,
      grpc::ServerWriter<typename Proto::NodeWatchResourcesResponse>* writer) override;

 private:
  HealthStreamer& streamer_;
};

struct HealthV1alpha1 {
  using DRAResourceHealth = v1alpha1::DRAResourceHealth;
  using NodeWatchResourcesRequest = v1alpha1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = v1alpha1::NodeWatchResourcesResponse;
};
struct HealthV1 {
  using DRAResourceHealth = v1::DRAResourceHealth;
  using NodeWatchResourcesRequest = v1::NodeWatchResourcesRequest;
  using NodeWatchResourcesResponse = v1::NodeWatchResourcesResponse;
};
using HealthV1alpha1Service = HealthService<HealthV1alpha1>;
using HealthV1Service = HealthService<HealthV1>;

// --- implementation of the templates ---

template <typename SendFn>
void HealthStreamer::Run(grpc::ServerContext* context, SendFn send) {
  std::vector<DeviceHealthReport> last;
  auto last_sent = std::chrono::steady_clock::now();
  bool first = true;
  std::unique_lock lock(mu_);
  uint64_t seen = notified_;
  while (!stopping_ && !context->IsCancelled()) {
    lock.unlock();
    std::vector<DeviceHealthReport> now = source_.CurrentHealth();
    const auto t = std::chrono::steady_clock::now();
    if (first || now != last || t - last_sent >= options_.resend_interval) {
      if (!send(now)) return;
      last = std::move(now);
      last_sent = t;
      first = false;
    }
    const std::chrono::steady_clock::duration wait = std::min<std::chrono::steady_clock::duration>(
        source_.StableFor().value_or(options_.poll_interval),
        last_sent + options_.resend_interval - std::chrono::steady_clock::now());
    lock.lock();
    cv_.wait_for(lock, wait, [&] { return stopping_ || notified_ != seen; });
    seen = notified_;
  }
}

template <typename Proto>
grpc::Status HealthService<Proto>::NodeWatchResources(
    grpc::ServerContext* context, const typename Proto::NodeWatchResourcesRequest*,
    grpc::ServerWriter<typename Proto::NodeWatchResourcesResponse>* writer) {
  streamer_.Run(context, [&](const std::vector<DeviceHealthReport>& reports) {
    typename Proto::NodeWatchResourcesResponse resp;
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (const DeviceHealthReport& r : reports) {
      auto* d = resp.add_devices();
      d->mutable_device()->set_pool_name(r.pool_name);
      d->mutable_device()->set_device_name(r.device_name);
      d->set_health(static_cast<decltype(d->health())>(static_cast<int>(r.state)));
      d->set_last_updated_time(now);
      d->set_health_check_timeout_seconds(streamer_.timeout_seconds());
      d->set_message(r.message.substr(0, 1024));
    }
    return writer->Write(resp);
  });
  return grpc::Status::OK;
}

}  // namespace dracpu::dra
