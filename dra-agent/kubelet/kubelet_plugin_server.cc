#include "dra-agent/kubelet/kubelet_plugin_server.h"

#include <grpcpp/resource_quota.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/thread_sanitizer.h"
#include "dra-agent/kubelet/serial_event_engine.h"

// The dra-agent and the tests that start this server run gRPC (common/thread_sanitizer.h).
DRACPU_TSAN_GRPC_PROGRAM()

namespace dracpu::dra {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(2);

// The sync server's threads: one polls for calls; a call (or the open health stream) holds a
// thread, and the poller that picked it up starts another poller, so calls run concurrently up to
// kMaxThreads (the kubelet runs Prepare of different pods in parallel). After a burst the extra
// threads end: at most kMaxPollers stay idle. Idle pollers wake only every kPollerTimeout (gRPC's
// default is 10 s; the wait ends at once on a call or on Shutdown).
constexpr int kMaxPollers = 1;
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

}  // namespace

KubeletPluginServer::KubeletPluginServer(const KubeletPluginServerOptions& options,
                                         ClaimPreparer& preparer,
                                         RegistrationService::StatusCallback on_status)
    : options_(options),
      v1_(preparer),
      v1beta1_(preparer),
      registration_(
          RegistrationInfo{kDriverName, options.paths.dra_socket, options.supported_versions},
          std::move(on_status)) {}

Result<std::unique_ptr<KubeletPluginServer>> KubeletPluginServer::Start(
    const KubeletPluginServerOptions& options, ClaimPreparer& preparer,
    RegistrationService::StatusCallback on_status) {
  std::unique_ptr<KubeletPluginServer> s(
      new KubeletPluginServer(options, preparer, std::move(on_status)));
  std::vector<grpc::Service*> services = {&s->v1_, &s->v1beta1_};
  services.insert(services.end(), options.extra_services.begin(), options.extra_services.end());
  services.push_back(&s->registration_);
  ASSIGN_OR_RETURN(s->server_,
                   Serve({options.paths.dra_socket, options.paths.registration_socket}, services));
  return s;
}

KubeletPluginServer::~KubeletPluginServer() { Shutdown(); }

void KubeletPluginServer::Shutdown() {
  if (!server_) return;
  // The registration socket goes first, so the kubelet's plugin watcher deregisters the plugin
  // while the DRA service still answers; then unary calls finish and streams (health) end when
  // cancelled at the deadline.
  ::unlink(options_.paths.registration_socket.c_str());
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_.reset();
  ::unlink(options_.paths.dra_socket.c_str());
}

}  // namespace dracpu::dra
