// KubeletPluginServer: the dra-agent's kubelet-facing gRPC server on two unix sockets.
//  * the DRA service socket (v1 and v1beta1 DRAPlugin, plus, with a HealthStreamer, the v1alpha1
//    and v1 DRAResourceHealth stream);
//  * the registration socket in the kubelet's plugins_registry.
// One grpc::Server listens on both (one completion queue, one set of sync-server threads), so
// the DRA socket is ready as soon as the kubelet can learn the endpoint from the registration.
// Sockets are mode 0600, directories we create 0750; stale sockets are removed before bind.
// Shutdown (or destruction) removes the registration socket first, so the kubelet deregisters
// the plugin while the DRA service still answers, then stops the server and removes the DRA
// socket.
//
// This header is the whole of dra-agent/kubelet/ that the rest of the agent sees: it names only
// our own types. The generated kubelet protos and gRPC stay in the folder's .cc files and its
// private adapter headers (dra_service.h, registration_service.h, health_service.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "dra-agent/kubelet/health_streamer.h"
#include "dra-agent/kubelet/plugin_paths.h"
#include "dra-agent/prepare/claim_preparer.h"

namespace dracpu::dra {

struct KubeletPluginServerOptions {
  PluginPaths paths;
  // Most preferred first; the kubelet picks the first it knows.
  std::vector<std::string> supported_versions = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
  // Serves the resource-health stream (v1alpha1 and v1) on the DRA socket; null: none. Not
  // owned; must outlive the server.
  HealthStreamer* health = nullptr;
};

// Gets every NotifyRegistrationStatus (on a gRPC thread).
using RegistrationStatusCallback = std::function<void(bool registered, const std::string& error)>;

class KubeletPluginServer {
 public:
  // Serves gRPC on options.paths. `preparer` must outlive the server.
  static Result<std::unique_ptr<KubeletPluginServer>> Start(
      const KubeletPluginServerOptions& options, ClaimPreparer& preparer,
      RegistrationStatusCallback on_status);
  virtual ~KubeletPluginServer() = default;

  // Idempotent; also run by the destructor.
  virtual void Shutdown() = 0;
  // The last status the kubelet reported (false before any).
  virtual bool registered() const = 0;
  virtual int get_info_calls() const = 0;
};

// How the dra-agent gets its kubelet-facing server: KubeletPluginServer::Start in main(), a fake
// that calls the ClaimPreparer directly in the agent's unit tests.
using KubeletPluginServerFactory = std::function<Result<std::unique_ptr<KubeletPluginServer>>(
    const KubeletPluginServerOptions&, ClaimPreparer&, RegistrationStatusCallback)>;

}  // namespace dracpu::dra
