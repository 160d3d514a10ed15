#include "dra-agent/kubelet/kubelet_plugin_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <optional>

#include "common/thread_sanitizer.h"
#include "dra-agent/kubelet/dra_service.h"
#include "dra-agent/kubelet/health_service.h"
#include "dra-agent/kubelet/registration_service.h"
#include "dra-agent/kubelet/serial_event_engine.h"

// The dra-agent and the tests that start this server run gRPC (common/thread_sanitizer.h).
DRACPU_TSAN_GRPC_PROGRAM()

namespace dracpu::dra {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(2);

// The sync server's threads: one polls for calls; a call (or the open health stream) holds a
// thread, and the poller that picked it up starts another poller, so calls run concurrently up to
// kMaxThreads (the kubelet runs Prepare of different pods in parallel). After a burst the extra
// threads end: at most kMaxPollers stay idle. Two, not one: with one, the thread that took a call
// ends after it (the poller it started is the one allowed to stay), so every call ran on a new
// thread, and on a virtual machine a new thread's first touches of its stack and heap fault
// (glibc gives a dead thread's stack pages back): a one-claim Prepare spent 0.2-0.3 ms of its
// 0.75 ms there (placement 105 -> 12 us, the GET 190 -> 100 us with a reused thread). Idle
// pollers wake only every kPollerTimeout (gRPC's default is 10 s; the wait ends at once on a call
// or on Shutdown).
constexpr int kMaxPollers = 2;
constexpr int kMaxThreads = 16;
constexpr int kPollerTimeoutMs = 600'000;

// One gRPC server on both sockets: one completion queue and one set of sync-server threads for
// the node's few kubelet calls, instead of a second server (and its pollers) for the one
// registration exchange. Each socket answers every service; the kubelet only asks each for its
// own.
Result<std::unique_ptr<grpc::Server>> Serve(const std::vector<std::string>& socket_paths,
                                            const std::vector<grpc::Service*>& services) {
  // Before the server exists, so gRPC's default EventEngine (a pool, a poller and a timer thread
  // waking every second) is never made for it; see serial_event_engine.h.
  SerialEventEngine::InstallAsDefault();
  grpc::ServerBuilder builder;
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, kMaxPollers);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC,
                              kPollerTimeoutMs);
  grpc::ResourceQuota quota("dracpu-kubelet-server");
  quota.SetMaxThreads(kMaxThreads);
  builder.SetResourceQuota(quota);
  // Fewer timers of gRPC's own on the kubelet's connections. gRPC 1.51's iomgr timer thread
  // wakes once a second per phase of its timer shards, and the timers a shard holds move its
  // phase away from the others' (docs/performance.md, "gRPC's threads"). None of these does
  // anything on a local unix socket: the BDP probe pings every 100-300 ms after traffic to size a
  // TCP flow-control window; deadline checking arms a timer per call to cancel the server side of
  // a call whose client gave up (the kubelet's registration calls carry 1 s deadlines; our
  // handlers do not watch for it, and a client that goes away still cancels the call); keepalive
  // pings (every 2 h) find peers that vanished without a close, which a unix socket's cannot.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  builder.AddChannelArgument(GRPC_ARG_ENABLE_DEADLINE_CHECKS, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, INT_MAX);  // INT_MAX: never
  for (const std::string& path : socket_paths) {
    RETURN_IF_ERROR(PrepareSocketPath(path));
    builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  }
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::string names;
    for (const std::string& p : socket_paths) names += (names.empty() ? "" : ", ") + p;
    return UnavailableError("cannot serve gRPC on unix sockets " + names);
  }
  // gRPC creates the sockets with the process umask; only the kubelet (root) may connect.
  for (const std::string& path : socket_paths) {
    if (::chmod(path.c_str(), 0600) != 0) {
      const int err = errno;
      server->Shutdown();
      return ErrnoStatus("chmod 0600 " + path, err);
    }
  }
  return server;
}

class GrpcKubeletPluginServer final : public KubeletPluginServer {
 public:
  GrpcKubeletPluginServer(const KubeletPluginServerOptions& options, ClaimPreparer& preparer,
                          RegistrationStatusCallback on_status)
      : options_(options),
        v1_(preparer),
        v1beta1_(preparer),
        registration_(
            RegistrationInfo{kDriverName, options.paths.dra_socket, options.supported_versions},
            std::move(on_status)) {
    if (options.health != nullptr) {
      health_v1alpha1_.emplace(*options.health);
      health_v1_.emplace(*options.health);
    }
  }
  ~GrpcKubeletPluginServer() override { Shutdown(); }

  Status Serve() {
    std::vector<grpc::Service*> services = {&v1_, &v1beta1_};
    if (health_v1alpha1_) services.push_back(&*health_v1alpha1_);
    if (health_v1_) services.push_back(&*health_v1_);
    services.push_back(&registration_);
    ASSIGN_OR_RETURN(
        server_,
        dra::Serve({options_.paths.dra_socket, options_.paths.registration_socket}, services));
    return Status::Ok();
  }

  void Shutdown() override {
    if (!server_) return;
    // The registration socket goes first, so the kubelet's plugin watcher deregisters the plugin
    // while the DRA service still answers; then unary calls finish and streams (health) end when
    // cancelled at the deadline.
    ::unlink(options_.paths.registration_socket.c_str());
    server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    server_.reset();
    ::unlink(options_.paths.dra_socket.c_str());
  }
  bool registered() const override { return registration_.registered(); }
  int get_info_calls() const override { return registration_.get_info_calls(); }

 private:
  const KubeletPluginServerOptions options_;
  DraV1Service v1_;
  DraV1beta1Service v1beta1_;
  std::optional<HealthV1alpha1Service> health_v1alpha1_;
  std::optional<HealthV1Service> health_v1_;
  RegistrationService registration_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace

Result<std::unique_ptr<KubeletPluginServer>> KubeletPluginServer::Start(
    const KubeletPluginServerOptions& options, ClaimPreparer& preparer,
    RegistrationStatusCallback on_status) {
  auto s = std::make_unique<GrpcKubeletPluginServer>(options, preparer, std::move(on_status));
  RETURN_IF_ERROR(s->Serve());
  return std::unique_ptr<KubeletPluginServer>(std::move(s));
}

}  // namespace dracpu::dra
