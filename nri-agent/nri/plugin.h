// Plugin: the NRI plugin side of one runtime connection (protocols.md §2-§4). It registers,
// serves the runtime's calls by converting them to the plain structs of types.h and calling a
// PluginHandler, and sends unsolicited UpdateContainers. Everything runs on one EventLoop.
//
// Lifecycle: Start() sends RegisterPlugin at once (the runtime drops a plugin that has not
// registered within its 5 s). The runtime then calls Configure — possibly before its answer to
// RegisterPlugin arrives, which is fine: the server side is already serving — then Synchronize
// (in chunks with `more` when the state is over 4 MiB; answered `more` until the last chunk,
// then the handler sees everything at once), then events. A failed registration, a protocol
// error or the runtime going away end in one PluginHandler::Disconnected call; reconnecting
// means starting a new Plugin on a new socket (the agent's job, with its backoff).
//
// Methods not implemented here (RunPodSandbox, StartContainer, ...) are answered UNIMPLEMENTED,
// which NRI >= 0.12 runtimes take as "send me StateChange instead".
//
// Thread safety: none; use from the loop thread (Post from elsewhere).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/event_loop.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "nri-agent/nri/types.h"

namespace dracpu::mux {
class TtrpcPeer;
}

namespace dracpu::nri {

inline constexpr char kDefaultSocketPath[] = "/var/run/nri/nri.sock";
inline constexpr char kPluginService[] = "nri.pkg.api.v1alpha1.Plugin";
inline constexpr char kRuntimeService[] = "nri.pkg.api.v1alpha1.Runtime";

struct PluginOptions {
  std::string name = "dra.cpu";  // [a-zA-Z0-9_.+-]+
  std::string index = "00";      // two ASCII digits; plugins run in index order
  std::string nri_version;       // informative, sent in RegisterPlugin
  // Our own bound on the RegisterPlugin call; the runtime's registration timeout is 5 s.
  std::chrono::milliseconds register_timeout{5000};
  // Bound on each UpdateContainers call.
  std::chrono::milliseconds update_timeout{2000};
};

// INVALID_ARGUMENT naming the problem when the runtime would refuse this name or index.
Status ValidatePluginIdentity(std::string_view name, std::string_view index);

// Connects to the runtime's NRI socket (a unix stream socket path, < 108 bytes).
Result<UniqueFd> ConnectNriSocket(const std::string& path);
// The runtime's pre-connected socket of a pre-launched plugin: NRI_PLUGIN_SOCKET holds its fd
// number. INVALID_ARGUMENT unless it is a decimal number naming an open socket.
Result<UniqueFd> AdoptPluginSocket(std::string_view env_value);

class Plugin {
 public:
  enum class State { kRegistering, kRegistered, kConfigured, kSynchronized, kClosed };
  using UpdateCallback = std::function<void(Result<std::vector<CpusetUpdate>> failed)>;

  // Takes the connected trunk and sends RegisterPlugin. `handler` must outlive the Plugin.
  // Errors: an invalid identity, or the transport could not be set up.
  static Result<std::unique_ptr<Plugin>> Start(loop::EventLoop& loop, UniqueFd trunk,
                                               PluginOptions options, PluginHandler& handler);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // Asks the runtime to apply `updates` to existing containers, without blocking: `done` runs
  // later with the updates the runtime failed to apply (empty = all applied) or an error.
  // FAILED_PRECONDITION before the runtime accepted our registration or after the connection
  // closed. `done` never runs inside this call.
  void UpdateContainers(const std::vector<CpusetUpdate>& updates, UpdateCallback done);

  // Closes the connection; Disconnected(reason) follows.
  void Close(const Status& reason);

  State state() const { return state_; }
  // Valid once Configure arrived.
  const RuntimeInfo& runtime() const { return runtime_; }

 private:
  Plugin(loop::EventLoop& loop, PluginOptions options, PluginHandler& handler);
  void RegisterHandlers();
  void OnClosed(const Status& reason);

  loop::EventLoop& loop_;
  PluginOptions options_;
  PluginHandler& handler_;
  std::unique_ptr<mux::TtrpcPeer> peer_;
  State state_ = State::kRegistering;
  bool registered_ = false;  // the runtime answered RegisterPlugin OK
  RuntimeInfo runtime_;
  // Synchronize chunks received with more = true, joined for the final call.
  std::vector<Pod> sync_pods_;
  std::vector<Container> sync_containers_;
  std::shared_ptr<Plugin*> self_;  // weak handle for deferred callbacks
};

}  // namespace dracpu::nri
