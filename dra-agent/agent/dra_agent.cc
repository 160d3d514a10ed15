#include "dra-agent/agent/dra_agent.h"

#include <glog/logging.h>
#include <pthread.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>

#include "common/sysfs_attribute.h"
#include "common/topology_discovery.h"
#include "common/unique_fd.h"
#include "dra-agent/agent/kubelet_cpu_manager.h"
#include "dra-agent/kube/resources.h"

namespace dracpu::dra {
namespace {

// Nothing decides on the dra-agent's heartbeat (its liveness is its pid and role lock); it
// shows the agent's loop turns (dracpu-shm says "late" from 10 s) and feeds systemd's watchdog
// (WatchdogSec=30s). Every 5 s keeps both honest for 0.2 wakeups/s.
constexpr auto kHeartbeatInterval = std::chrono::seconds(5);
constexpr auto kNriSilenceLimit = std::chrono::seconds(30);

shm::ConfigSummary ConfigSummaryOf(const DriverConfig& c) {
  shm::ConfigSummary s{};
  s.device_mode = static_cast<uint32_t>(c.cpu_device_mode == CpuDeviceMode::kGrouped
                                            ? shm::DeviceMode::kGrouped
                                            : shm::DeviceMode::kIndividual);
  switch (c.group_by) {
    case GroupBy::kNumaNode:
      s.group_by = static_cast<uint32_t>(shm::GroupBy::kNumaNode);
      break;
    case GroupBy::kSocket:
      s.group_by = static_cast<uint32_t>(shm::GroupBy::kSocket);
      break;
    case GroupBy::kMachine:
      s.group_by = static_cast<uint32_t>(shm::GroupBy::kMachine);
      break;
  }
  if (c.strict_cpu_reservation) s.flags |= shm::kConfigStrictCpuReservation;
  if (c.policy.full_pcpus_only) s.flags |= shm::kConfigFullPcpusOnly;
  if (c.policy.distribute_cpus_across_numa) s.flags |= shm::kConfigDistributeAcrossNuma;
  if (c.policy.prefer_align_cpus_by_uncorecache) s.flags |= shm::kConfigAlignByUncoreCache;
  if (c.policy.align_memory) s.flags |= shm::kConfigAlignMemory;
  s.min_shared_cpus = static_cast<uint32_t>(c.min_shared_cpus);
  return s;
}

Status MakeParentDirectory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return InternalError("create directory " + parent.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<DraAgent>> DraAgent::Start(const AgentConfig& config,
                                                  const std::string& version, DraEnv env) {
  if (!env.kube_client || !env.kubelet_server) {
    return InvalidArgumentError("the dra-agent needs a Kubernetes API client and a kubelet server");
  }
  std::unique_ptr<DraAgent> agent(new DraAgent(std::move(env)));
  agent->config_ = config;
  ASSIGN_OR_RETURN(agent->client_, agent->env_.kube_client());
  if (agent->client_ == nullptr) {
    return InvalidArgumentError("the dra-agent needs a Kubernetes API client");
  }
  RETURN_IF_ERROR(agent->StartParts(config, version));
  return agent;
}

Status DraAgent::PublishOnlineCpus(const CpuSet& online) {
  ASSIGN_OR_RETURN(shm::WriteTransaction txn, segment_->Begin());
  shm::TopologySummary t = txn.topology();
  t.online = online;
  RETURN_IF_ERROR(txn.SetTopology(t));
  txn.Commit();
  return Status::Ok();
}

Status DraAgent::StartParts(const AgentConfig& config, const std::string& version) {
  // 1. The node's CPUs (env_.sysfs: through the sysfs overlay when one is configured).
  ASSIGN_OR_RETURN(topology_, DiscoverTopology(env_.sysfs));
  for (const std::string& w : topology_.warnings) LOG(WARNING) << "topology: " << w;
  LOG(INFO) << "topology: online " << topology_.online.ToListString() << ", "
            << topology_.packages.size() << " package(s), " << topology_.numa_nodes.size()
            << " NUMA node(s), " << topology_.cores.size() << " core(s)";
  const CpuSet offline_reserved = config.driver.reserved_cpus - topology_.online;
  if (!offline_reserved.Empty()) {
    LOG(WARNING) << "reservedCPUs " << offline_reserved.ToListString() << " are not online";
  }
  CatalogOptions& co = catalog_options_;
  co.mode = config.driver.cpu_device_mode;
  co.group_by = config.driver.group_by;
  co.reserved = config.driver.reserved_cpus;
  co.strict_cpu_reservation = config.driver.strict_cpu_reservation;
  co.min_shared_cpus = config.driver.min_shared_cpus;
  co.full_pcpus_only = config.driver.policy.full_pcpus_only;
  co.expose_pcie_roots = config.expose_pcie_roots;
  co.publish_node_allocatable_mapping = config.driver.publish_node_allocatable_resource_mapping;
  ASSIGN_OR_RETURN(catalog_, BuildDeviceCatalog(topology_, co));
  ASSIGN_OR_RETURN(allocator::TopologyIndex index, allocator::TopologyIndex::Build(topology_));
  index_ = std::make_unique<allocator::TopologyIndex>(std::move(index));

  // The kubelet's static CPU Manager undoes our pinning: said at start, in /readyz and health.
  {
    const Result<KubeletCpuManagerState> state =
        ReadKubeletCpuManagerState(env_.host, config.kubelet_root_dir);
    if (const std::string conflict = KubeletCpuManagerConflict(state); !conflict.empty()) {
      LOG(ERROR) << "conflict: " << conflict;
    } else if (!state.ok() && state.status().code() != StatusCode::kNotFound) {
      LOG(WARNING) << "kubelet CPU Manager state not checked: " << state.status().ToString();
    }
  }

  // 2. Shared memory.
  const std::string shm_path =
      config.shm_path.empty() ? shm::DefaultSegmentPath() : config.shm_path;
  RETURN_IF_ERROR(MakeParentDirectory(shm_path));
  shm::OpenOptions so;
  so.role = shm::Role::kDraAgent;
  so.create_if_missing = true;
  so.node_name = config.node_name;
  so.version = version;
  so.rebuild = [&shm_path](const Status& why) {
    LOG(WARNING) << "shared memory " << shm_path << " is unusable (" << why.ToString()
                 << "); rebuilding it from the CDI specs";
    return true;
  };
  ASSIGN_OR_RETURN(segment_, shm::Segment::Open(shm_path, so));
  if (const auto& r = segment_->open_recovery(); r) {
    for (const std::string& line : r->actions) LOG(WARNING) << "shared memory repair: " << line;
  }
  {
    ASSIGN_OR_RETURN(shm::WriteTransaction txn, segment_->Begin());
    RETURN_IF_ERROR(txn.SetConfig(ConfigSummaryOf(config.driver)));
    shm::TopologySummary t{};
    t.online = topology_.online;
    t.reserved = config.driver.reserved_cpus;
    t.allocatable = catalog_.allocatable;
    t.numa_nodes = static_cast<uint32_t>(topology_.numa_nodes.size());
    t.sockets = static_cast<uint32_t>(topology_.packages.size());
    RETURN_IF_ERROR(txn.SetTopology(t));
    txn.Commit();
  }

  // 3. CDI, and what survived a crash.
  dra_metrics_ = std::make_unique<DraMetrics>(metrics_);
  process_metrics_ = std::make_unique<ProcessMetrics>(metrics_, env_.host);
  cdi_ = std::make_unique<CdiStore>(env_.host, config.cdi_root);
  RETURN_IF_ERROR(cdi_->EnsureDirectory());
  ASSIGN_OR_RETURN(const PluginPaths paths, MakePluginPaths(config.kubelet_root_dir));
  metadata_ = std::make_unique<DeviceMetadataWriter>(env_.host, paths.plugin_dir, config.cdi_root);
  PreparerOptions po;
  po.pool_name = config.node_name;
  po.policy = config.driver.policy;
  po.min_shared_cpus = config.driver.min_shared_cpus;
  po.strict_cpu_reservation = config.driver.strict_cpu_reservation;
  po.metadata = metadata_.get();
  // Read at every placement (one small file), so a CPU unplugged since start-up is never granted,
  // even before the topology watcher's next poll. Old kernels without the file: the start-up set.
  po.online_cpus = [fs = &env_.sysfs, startup = topology_.online]() -> Result<CpuSet> {
    constexpr char kOnline[] = "sys/devices/system/cpu/online";
    if (!fs->Exists(kOnline)) return startup;
    return ReadSysfsCpuList(*fs, kOnline);
  };
  kube::KubeClient* client = client_.get();
  preparer_ = std::make_unique<CpuClaimPreparer>(
      topology_, *index_, catalog_, *segment_, *cdi_,
      [client](const std::string& ns, const std::string& name) -> Result<std::string> {
        if (client == nullptr) return UnavailableError("no Kubernetes API client");
        // Stage parses the claim itself, validating it as untrusted input.
        return client->GetBody(kube::ResourceClaimPath(ns, name));
      },
      po, dra_metrics_.get(), env_.clock);
  auto cpus_of = [seg = segment_.get()](const std::string& uid) -> std::optional<CpuSet> {
    auto claim = seg->FindClaim(uid);
    if (!claim.ok() || !claim->has_value()) return std::nullopt;
    return (*claim)->cpus;
  };
  ClaimPreparer* inner = preparer_.get();
  if (client_ != nullptr) {
    status_writer_ =
        std::make_unique<ClaimStatusWriter>(*client_, server_features_, env_.wall_time);
    reporting_preparer_ = std::make_unique<StatusReportingClaimPreparer>(
        *preparer_, *status_writer_, topology_, catalog_, cpus_of);
    inner = reporting_preparer_.get();
  }
  logged_preparer_ =
      std::make_unique<LoggingClaimPreparer>(*inner, cpus_of, env_.clock, env_.random);
  ASSIGN_OR_RETURN(std::vector<std::string> repaired, preparer_->Reconcile());
  for (const std::string& line : repaired) LOG(WARNING) << "reconcile: " << line;

  // 4. HTTP, on the event loop Run() runs (requests wait in the listen backlog until then).
  ASSIGN_OR_RETURN(loop_, loop::EventLoop::Create(env_.clock));
  ASSIGN_OR_RETURN(
      http_, HttpServer::Start(*loop_, config.bind_address,
                               {{"/metrics", [this] { return Metrics(); }},
                                {"/healthz",
                                 [] {
                                   return HttpResponse{200, "text/plain", "ok\n"};
                                 }},
                                {"/readyz", [this] { return Readyz(); }},
                                {"/debug/resourceslices", [this] { return SlicesStatus(); }}}));

  // Slices: published and kept true in the background; republished when CPUs come and go.
  SlicePublisherOptions spo;
  spo.node_name = config.node_name;
  spo.features = &server_features_;
  spo.metrics = &metrics_;
  spo.on_report = [](const PublisherReport& r) {
    switch (r.kind) {
      case PublisherReport::Kind::kRefused:
        LOG(ERROR) << "ResourceSlice write failed: " << r.text;
        break;
      case PublisherReport::Kind::kRecovered:
        LOG(INFO) << r.text;
        break;
      case PublisherReport::Kind::kShape:
        LOG(WARNING) << "ResourceSlices: " << r.text;
        break;
      case PublisherReport::Kind::kFeature:
        LOG(INFO) << "API server feature " << r.text;
        break;
    }
  };
  ASSIGN_OR_RETURN(publisher_, SlicePublisher::Create(*client_, env_.clock, env_.random, spo));
  publisher_->SetDesired(catalog_);
  publisher_thread_ = std::jthread([this](const std::stop_token& stop) {
    pthread_setname_np(pthread_self(), "slice-publisher");
    publisher_->Run(stop);
  });
  watcher_ = std::make_unique<TopologyWatcher>(
      env_.sysfs, env_.clock, topology_, [this](const CpuTopology& t) {
        LOG(WARNING) << "CPUs online changed to " << t.online.ToListString()
                     << "; republishing ResourceSlices";
        // The nri-agent's shared pool follows `online` in shared memory (ComputeSharedPool).
        if (Status s = PublishOnlineCpus(t.online); !s.ok()) {
          LOG(ERROR) << "cannot record the online CPUs in shared memory: " << s.ToString();
        }
        auto catalog = BuildDeviceCatalog(t, catalog_options_);
        if (!catalog.ok()) {
          LOG(ERROR) << "cannot rebuild the devices: " << catalog.status().ToString();
          return;
        }
        KeepStartupDeviceNames(catalog_,
                               *catalog);  // individual names must not shift to other CPUs
        publisher_->SetDesired(std::move(catalog).value());
        if (streamer_) streamer_->Notify();  // devices behind offline CPUs turn Unhealthy now
      });
  // Polled by Run() on the loop, with every second heartbeat (TopologyWatcherOptions::interval).

  // 5. The kubelet.
  health_ = std::make_unique<DeviceHealthMonitor>(catalog_, config.node_name, env_.sysfs, *segment_,
                                                  kNriSilenceLimit, BoottimeNow,
                                                  [this] { return KubeletCpuManagerProblem(); });
  streamer_ = std::make_unique<HealthStreamer>(*health_, HealthStreamOptions{}, env_.clock);
  KubeletPluginServerOptions ko;
  ko.paths = paths;
  ko.supported_versions = {"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                           "v1alpha1.DRAResourceHealth"};
  ko.health = streamer_.get();
  ASSIGN_OR_RETURN(
      kubelet_, env_.kubelet_server(ko, *logged_preparer_, [](bool ok, const std::string& error) {
        if (ok) {
          LOG(INFO) << "registered with the kubelet";
        } else {
          LOG(ERROR) << "the kubelet refused the registration: " << error;
        }
      }));
  LOG(INFO) << "serving the kubelet on " << paths.dra_socket << " (registration "
            << paths.registration_socket << "), HTTP on port " << http_->port();
  return Status::Ok();
}

HttpResponse DraAgent::Metrics() {
  shm::SnapshotOptions o;
  o.containers = false;
  DraMetrics& m = *dra_metrics_;
  if (auto s = segment_->ReadSnapshot(o); s.ok()) {
    CpuSet held;
    for (const shm::ClaimEntry& c : s->claims) held |= shm::DecodeClaim(c).cpus;
    m.allocated_cpus.Set({}, held.Count());
    m.available_cpus.Set({}, shm::ComputeSharedPool(s->topology, s->config, s->claims).Count());
    m.claims_active.Set({}, static_cast<double>(s->claims.size()));
  }
  m.reserved_cpus.Set({}, config_.driver.reserved_cpus.Count());
  m.shared_pool_min_cpus.Set({}, config_.driver.min_shared_cpus);
  m.kubelet_cpu_manager_conflict.Set({}, KubeletCpuManagerProblem().empty() ? 0 : 1);
  if (Result<shm::AgentStatus> nri = segment_->GetAgentStatus(shm::Role::kNriAgent); nri.ok()) {
    const std::chrono::nanoseconds age =
        nri->heartbeat_age ? *nri->heartbeat_age : BoottimeNow() - started_boottime_;
    m.nri_heartbeat_age.Set({}, std::chrono::duration<double>(age).count());
  }
  if (DeviceHealthMonitor* health = health_.get()) {
    double by_state[3] = {0, 0, 0};  // DeviceHealthState: unknown, healthy, unhealthy
    for (const DeviceHealthReport& r : health->CurrentHealth()) {
      const int i = static_cast<int>(r.state);
      if (i >= 0 && i < 3) ++by_state[i];
    }
    m.devices_by_health.Set({"Unknown"}, by_state[0]);
    m.devices_by_health.Set({"Healthy"}, by_state[1]);
    m.devices_by_health.Set({"Unhealthy"}, by_state[2]);
  }
  const SlicePublisherStats st = PublisherStats();
  m.resourceslices.Set({}, st.slices);
  m.resourceslice_sync_errors.Set({}, static_cast<double>(st.sync_errors));
  process_metrics_->Update();
  return {200, "text/plain; version=0.0.4; charset=utf-8", metrics_.RenderText()};
}

std::string DraAgent::KubeletCpuManagerProblem() const {
  return KubeletCpuManagerConflict(ReadKubeletCpuManagerState(env_.host, config_.kubelet_root_dir));
}

SlicePublisherStats DraAgent::PublisherStats() const {
  if (publisher_ != nullptr) return publisher_->stats();
  SlicePublisherStats starting;
  starting.last_error = "the agent is starting";
  return starting;
}

HttpResponse DraAgent::Readyz() {
  // Every reason, not just the first: an operator fixing one should not discover the next.
  std::string problems;
  if (const std::string conflict = KubeletCpuManagerProblem(); !conflict.empty()) {
    problems += conflict + "\n";
  }
  if (!registered()) problems += "not registered with the kubelet yet\n";
  const SlicePublisherStats st = PublisherStats();
  std::string causes;
  for (const PublishErrorCause& c : st.errors) {
    causes += "  " + c.ToString() + " (" + std::to_string(c.count) + "x, last " + c.request + ")\n";
  }
  // A refused write means the cluster does not see (all of) this node's CPUs: not ready, with
  // the server's own words, until a sync succeeds.
  if (st.rejected) {
    problems += "ResourceSlices refused by the API server:\n" + causes;
  } else if (!st.published) {
    problems += "ResourceSlices not published yet: " + st.last_error + "\n" + causes;
  }
  if (!problems.empty()) return {503, "text/plain", problems};
  return {200, "text/plain", "ready\n"};
}

HttpResponse DraAgent::SlicesStatus() {
  const SlicePublisherStats st = PublisherStats();
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  auto str = [&w](const std::string& v) {
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  };
  w.StartObject();
  w.Key("published");
  w.Bool(st.published);
  w.Key("rejected");
  w.Bool(st.rejected);
  w.Key("slices");
  w.Int(st.slices);
  w.Key("generation");
  w.Int64(st.generation);
  w.Key("lastError");
  str(st.last_error);
  w.Key("publishErrors");
  w.Uint64(st.publish_errors);
  w.Key("droppedFields");
  w.Uint64(st.dropped_fields);
  w.Key("errors");
  w.StartArray();
  for (const PublishErrorCause& c : st.errors) {
    w.StartObject();
    w.Key("code");
    str(c.code);
    w.Key("reason");
    str(c.reason);
    w.Key("field");
    str(c.field);
    w.Key("message");
    str(c.message);
    w.Key("request");
    str(c.request);
    w.Key("count");
    w.Uint64(c.count);
    w.EndObject();
  }
  w.EndArray();
  w.Key("shapeNotes");
  w.StartArray();
  for (const std::string& n : st.shape_notes) str(n);
  w.EndArray();
  w.Key("server");
  w.StartObject();
  w.Key("version");
  str(server_features_.server_version());
  w.Key("features");
  w.StartObject();
  for (int i = 0; i < kube::kServerFeatureCount; ++i) {
    const auto f = static_cast<kube::ServerFeature>(i);
    const kube::FeatureFinding finding = server_features_.Finding(f);
    w.Key(std::string(kube::ServerFeatureGate(f)).c_str());
    w.StartObject();
    w.Key("state");
    str(std::string(kube::FeatureStateName(finding.state)));
    w.Key("evidence");
    str(finding.evidence);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return {200, "application/json", std::string(b.GetString(), b.GetSize()) + "\n"};
}

Status DraAgent::Run(int stop_fd, const std::function<void()>& on_heartbeat) {
  // One timer for the heartbeat and the topology poll, which rides on every few heartbeats
  // (TopologyWatcherOptions::interval): two timers drift apart and wake the agent twice. The
  // timer re-arms itself from the time it runs, so a late turn (a slow /metrics, a long topology
  // read) delays the next one instead of bunching them up.
  const int64_t beats_per_poll =
      std::max<int64_t>(1, TopologyWatcherOptions{}.interval / kHeartbeatInterval);
  int64_t beats = 0;
  loop::EventLoop::TimerId timer = 0;
  std::function<void()> tick = [&] {
    timer = loop_->AddTimer(kHeartbeatInterval, tick);
    segment_->Heartbeat();
    if (on_heartbeat) on_heartbeat();
    if (++beats % beats_per_poll == 0) {
      watcher_->Poll().status().IgnoreError();  // counted in the watcher's stats; retried next time
    }
  };
  timer = loop_->AddTimer(kHeartbeatInterval, tick);
  segment_->Heartbeat();
  if (on_heartbeat) on_heartbeat();
  // A SIGTERM (readable stop_fd) ends the loop at once, whatever is left of the intervals.
  auto stop = loop_->Watch(stop_fd, EPOLLIN, [this](uint32_t) { loop_->Stop(); });
  Status run = stop.ok() ? loop_->Run() : stop.status();
  if (stop.ok()) loop_->Unwatch(*stop);
  loop_->CancelTimer(timer);  // it refers to this call's function
  return run;
}

void DraAgent::Stop() {
  if (streamer_) streamer_->Stop();
  if (kubelet_) kubelet_->Shutdown();
  // Slices stay in the API: the next start adopts them, as the kubelet expects.
  if (publisher_) publisher_->Stop();
  publisher_thread_.request_stop();
  if (publisher_thread_.joinable()) publisher_thread_.join();
  if (http_) http_->Stop();
}

DraAgent::~DraAgent() { Stop(); }

}  // namespace dracpu::dra
