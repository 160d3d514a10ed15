// DraAgent: the dra-agent process's parts, started in the order that keeps claims safe:
//   1. topology from sysfs, the device catalog, the allocator's index;
//   2. the shared-memory segment (created or rebuilt when missing or incompatible), with the
//      config and topology summaries the nri-agent reads;
//   3. the CDI directory, and Reconcile() of shared memory with the CDI specs, so a claim
//      prepared before a crash stays reserved;
//   4. /metrics, /healthz, /readyz (served by Run() on the agent's event loop); the ResourceSlice
//      publisher (kept true against the API, on its own thread) and the sysfs watcher that
//      republishes when CPUs go online or offline;
//   5. last, the kubelet-facing gRPC servers (DRA v1/v1beta1, health) and the registration
//      socket: the kubelet can only call Prepare once everything above is ready.
// Stop() (or destruction) deregisters first, then stops the rest. Every real implementation
// (filesystems, clock, randomness, the API client, the kubelet sockets) comes from the DraEnv
// main() builds (dra_env.h); the agent constructs none. Thread safety: Start, Run and Stop from
// one thread (main's): Run's event loop serves HTTP and runs the timers there; the publisher and
// the kubelet's gRPC server run on their own threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/cpu_topology.h"
#include "common/event_loop.h"
#include "common/file_system.h"
#include "common/http_server.h"
#include "common/metrics.h"
#include "common/process_metrics.h"
#include "common/status.h"
#include "dra-agent/agent/agent_config.h"
#include "dra-agent/agent/claim_status_writer.h"
#include "dra-agent/agent/dra_env.h"
#include "dra-agent/agent/logging_claim_preparer.h"
#include "dra-agent/agent/status_reporting_claim_preparer.h"
#include "dra-agent/allocator/topology_index.h"
#include "dra-agent/cdi/cdi_store.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/devices/topology_watcher.h"
#include "dra-agent/health/device_health_monitor.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/server_features.h"
#include "dra-agent/kubelet/health_streamer.h"
#include "dra-agent/kubelet/kubelet_plugin_server.h"
#include "dra-agent/metrics/dra_metrics.h"
#include "dra-agent/prepare/cpu_claim_preparer.h"
#include "dra-agent/slices/slice_publisher.h"
#include "shm-schema/segment.h"

namespace dracpu::dra {

class DraAgent {
 public:
  // Makes the API client (env.kube_client: ResourceClaims, ResourceSlices once the publisher
  // runs) and starts every part on `env`'s seams, which must outlive the agent.
  static Result<std::unique_ptr<DraAgent>> Start(const AgentConfig& config,
                                                 const std::string& version, DraEnv env);
  ~DraAgent();
  DraAgent(const DraAgent&) = delete;
  DraAgent& operator=(const DraAgent&) = delete;

  // The agent's event loop on the calling thread, until `stop_fd` becomes readable (main passes
  // its signalfd; the fd is not read); returns then, or with the error of the wait. On the loop:
  // the HTTP server (/metrics, /healthz, /readyz; connections made since Start wait in the
  // listen backlog until Run), a heartbeat into shared memory every 5 s, calling `on_heartbeat`
  // after each (main sends systemd's WATCHDOG=1 there), and the topology watcher's poll (CPU
  // hotplug) with every second heartbeat (10 s). One timer, on env.clock; between its turns the
  // thread blocks in the kernel.
  Status Run(int stop_fd, const std::function<void()>& on_heartbeat = {});
  void Stop();

  bool registered() const { return kubelet_ != nullptr && kubelet_->registered(); }
  bool slices_published() const { return PublisherStats().published; }
  int http_port() const { return http_ ? http_->port() : 0; }
  const CpuTopology& topology() const { return topology_; }
  const DeviceCatalog& catalog() const { return catalog_; }
  // What the agent learned about the API server (which optional fields it keeps); other
  // writers (e.g. ResourceClaim status) ask and record here too.
  kube::ServerFeatures& server_features() { return server_features_; }

 private:
  explicit DraAgent(DraEnv env) : env_(std::move(env)) {}
  Status StartParts(const AgentConfig& config, const std::string& version);
  // Rewrites the segment's topology.online after a CPU hotplug (allocatable stays).
  Status PublishOnlineCpus(const CpuSet& online);
  HttpResponse Metrics();
  HttpResponse Readyz();
  // /debug/resourceslices: the publisher's state, the server's features and the shape notes,
  // as JSON (gatherinfo shows it).
  HttpResponse SlicesStatus();
  // kubelet_cpu_manager.h's conflict on this node, or "".
  std::string KubeletCpuManagerProblem() const;

  const DraEnv env_;
  AgentConfig config_;
  kube::ServerFeatures server_features_{env_.clock};
  std::unique_ptr<kube::KubeClient> client_;
  CpuTopology topology_;
  std::unique_ptr<allocator::TopologyIndex> index_;
  DeviceCatalog catalog_;
  std::unique_ptr<shm::Segment> segment_;
  std::unique_ptr<CdiStore> cdi_;
  std::unique_ptr<DeviceMetadataWriter> metadata_;
  MetricsRegistry metrics_;
  std::unique_ptr<DraMetrics> dra_metrics_;
  std::unique_ptr<ProcessMetrics> process_metrics_;
  const std::chrono::nanoseconds started_boottime_ = BoottimeNow();
  // The publisher's stats, or "not published yet" before it exists.
  SlicePublisherStats PublisherStats() const;
  std::unique_ptr<CpuClaimPreparer> preparer_;
  // With an API client: the claims' status.devices (KEP-4817), behind the logging layer.
  std::unique_ptr<ClaimStatusWriter> status_writer_;
  std::unique_ptr<StatusReportingClaimPreparer> reporting_preparer_;
  std::unique_ptr<LoggingClaimPreparer> logged_preparer_;  // what the kubelet calls
  std::unique_ptr<DeviceHealthMonitor> health_;
  std::unique_ptr<HealthStreamer> streamer_;
  std::unique_ptr<loop::EventLoop> loop_;  // Run()'s; made by Start for the HTTP server
  std::unique_ptr<HttpServer> http_;
  CatalogOptions catalog_options_;
  std::unique_ptr<SlicePublisher> publisher_;
  std::unique_ptr<TopologyWatcher> watcher_;
  std::jthread publisher_thread_;
  std::unique_ptr<KubeletPluginServer> kubelet_;
};

}  // namespace dracpu::dra
