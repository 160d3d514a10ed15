// gRPC adapters of the kubelet's DRA resource-health stream (v1alpha1 and v1
// DRAResourceHealth) over a HealthStreamer. Private to dra-agent/kubelet/: only its .cc files
// include this header (it brings the generated code); the rest of the agent sees
// health_streamer.h and kubelet_plugin_server.h.
#pragma once

#include <chrono>
#include <cstdint>

#include "dra-agent/kubelet/health_streamer.h"
#include "dra_health_v1.grpc.pb.h"
#include "dra_health_v1alpha1.grpc.pb.h"

namespace dracpu::dra {

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

template <typename Proto>
grpc::Status HealthService<Proto>::NodeWatchResources(
    grpc::ServerContext* context, const typename Proto::NodeWatchResourcesRequest*,
    grpc::ServerWriter<typename Proto::NodeWatchResourcesResponse>* writer) {
  streamer_.Run([context] { return context->IsCancelled(); },
                [&](const std::vector<DeviceHealthReport>& reports) {
                  typename Proto::NodeWatchResourcesResponse resp;
                  // Wall-clock seconds, as the kubelet reads last_updated_time.
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
