#include "dra-agent/kubelet/kubelet_plugin_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace dracpu::dra {
namespace {

constexpr auto kShutdownGrace = std::chrono::seconds(2);

Result<std::unique_ptr<grpc::Server>> Serve(const std::string& socket_path,
                                            const std::vector<grpc::Service*>& services) {
  RETURN_IF_ERROR(PrepareSocketPath(socket_path));
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return UnavailableError("cannot serve gRPC on unix socket " + socket_path);
  // gRPC creates the socket with the process umask; only the kubelet (root) may connect.
  if (::chmod(socket_path.c_str(), 0600) != 0) {
    const int err = errno;
    server->Shutdown();
    return ErrnoStatus("chmod 0600 " + socket_path, err);
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
  std::vector<grpc::Service*> dra_services = {&s->v1_, &s->v1beta1_};
  dra_services.insert(dra_services.end(), options.extra_services.begin(),
                      options.extra_services.end());
  ASSIGN_OR_RETURN(s->dra_server_, Serve(options.paths.dra_socket, dra_services));
  ASSIGN_OR_RETURN(s->registration_server_,
                   Serve(options.paths.registration_socket, {&s->registration_}));
  return s;
}

KubeletPluginServer::~KubeletPluginServer() { Shutdown(); }

void KubeletPluginServer::Shutdown() {
  if (registration_server_) {
    registration_server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    registration_server_.reset();
    ::unlink(options_.paths.registration_socket.c_str());
  }
  if (dra_server_) {
    // Streams (health) end when cancelled at the deadline; unary calls finish first.
    dra_server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    dra_server_.reset();
    ::unlink(options_.paths.dra_socket.c_str());
  }
}

}  // namespace dracpu::dra
