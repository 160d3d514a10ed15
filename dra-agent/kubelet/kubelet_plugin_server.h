// KubeletPluginServer: the dra-agent's kubelet-facing gRPC server on two unix sockets.
//  * the DRA service socket (v1 and v1beta1 DRAPlugin, plus any extra service such as health);
//  * the registration socket in the kubelet's plugins_registry.
// One grpc::Server listens on both (one completion queue, one set of sync-server threads), so
// the DRA socket is ready as soon as the kubelet can learn the endpoint from the registration.
// Sockets are mode 0600, directories we create 0750; stale sockets are removed before bind.
// Shutdown (or destruction) removes the registration socket first, so the kubelet deregisters
// the plugin while the DRA service still answers, then stops the server and removes the DRA
// socket.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "dra-agent/kubelet/dra_service.h"
#include "dra-agent/kubelet/plugin_paths.h"
#include "dra-agent/kubelet/registration_service.h"

namespace dracpu::dra {

struct KubeletPluginServerOptions {
  PluginPaths paths;
  // Most preferred first; the kubelet picks the first it knows.
  std::vector<std::string> supported_versions = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
  // Further services on the DRA socket (e.g. resource health). Not owned; must outlive the server.
  std::vector<grpc::Service*> extra_services;
};

class KubeletPluginServer {
 public:
  // `preparer` must outlive the server. `on_status` gets every NotifyRegistrationStatus.
  static Result<std::unique_ptr<KubeletPluginServer>> Start(
      const KubeletPluginServerOptions& options, ClaimPreparer& preparer,
      RegistrationService::StatusCallback on_status);
  ~KubeletPluginServer();
  KubeletPluginServer(const KubeletPluginServer&) = delete;
  KubeletPluginServer& operator=(const KubeletPluginServer&) = delete;

  void Shutdown();
  bool registered() const { return registration_.registered(); }
  int get_info_calls() const { return registration_.get_info_calls(); }

 private:
  KubeletPluginServer(const KubeletPluginServerOptions& options, ClaimPreparer& preparer,
                      RegistrationService::StatusCallback on_status);

  const KubeletPluginServerOptions options_;
  DraV1Service v1_;
  DraV1beta1Service v1beta1_;
  RegistrationService registration_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace dracpu::dra
