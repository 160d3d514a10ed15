// Plain C++ views of the NRI objects the nri-agent's policy works with, and the interface the
// policy implements. No protobuf here: nri-agent/nri/convert.h maps these to and from the wire
// messages, and only nri-agent/nri/ includes generated code.
//
// Only what a CPU-pinning plugin reads or writes is kept (protocols.md §3.7); everything else the
// runtime sends is dropped at the adapter.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dracpu::nri {

struct Pod {
  std::string id;  // sandbox id
  std::string name;
  std::string uid;  // Kubernetes pod UID
  std::string namespace_name;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  friend bool operator==(const Pod&, const Pod&) = default;
};

enum class ContainerState { kUnknown = 0, kCreated = 1, kPaused = 2, kRunning = 3, kStopped = 4 };

// A cpuset pair in cpuset list syntax ("0-3,8"); empty means "not set / leave unchanged".
struct Cpuset {
  std::string cpus;
  std::string mems;
  bool empty() const { return cpus.empty() && mems.empty(); }
  friend bool operator==(const Cpuset&, const Cpuset&) = default;
};

struct Container {
  std::string id;
  std::string pod_sandbox_id;
  std::string name;  // Kubernetes container name
  ContainerState state = ContainerState::kUnknown;
  std::vector<std::string> env;  // "KEY=VALUE", CDI-injected env included at creation
  std::map<std::string, std::string> annotations;
  Cpuset cpuset;  // linux.resources.cpu as the runtime reports it
  uint32_t pid = 0;
  friend bool operator==(const Container&, const Container&) = default;
};

// A cpuset change for an existing container (NRI ContainerUpdate, cpu part only).
struct CpusetUpdate {
  std::string container_id;
  Cpuset cpuset;
  bool ignore_failure = false;
  friend bool operator==(const CpusetUpdate&, const CpusetUpdate&) = default;
};

// The answer to CreateContainer: the new container's cpuset (fields left empty are not
// adjusted) and updates for other containers (never the one being created).
struct CreateContainerResult {
  Cpuset adjust;
  std::vector<CpusetUpdate> updates;
  friend bool operator==(const CreateContainerResult&, const CreateContainerResult&) = default;
};

// Events a plugin subscribes to (NRI Event enum values; mask bit = 1 << (value - 1)).
enum class Event : int {
  kRunPodSandbox = 1,
  kStopPodSandbox = 2,
  kRemovePodSandbox = 3,
  kCreateContainer = 4,
  kPostCreateContainer = 5,
  kStartContainer = 6,
  kPostStartContainer = 7,
  kUpdateContainer = 8,
  kPostUpdateContainer = 9,
  kStopContainer = 10,
  kRemoveContainer = 11,
};
using EventMask = int32_t;
constexpr EventMask MaskOf(Event e) { return EventMask{1} << (static_cast<int>(e) - 1); }
// Every bit a runtime with NRI <= 0.9 (containerd 2.0/2.1) accepts; anything outside makes it
// drop the plugin (protocols.md §3.2).
inline constexpr EventMask kEventsValidOnOldRuntimes = 0x7FF;

struct RuntimeInfo {
  std::string runtime_name;  // "containerd", "cri-o"
  std::string runtime_version;
  std::string nri_version;  // empty before NRI 0.12
  std::string config;       // plugin config text (pre-launched plugins only)
  std::chrono::milliseconds registration_timeout{0};  // 0 = runtime did not say (NRI < 0.7)
  std::chrono::milliseconds request_timeout{0};
  friend bool operator==(const RuntimeInfo&, const RuntimeInfo&) = default;
};

// What the policy implements. Called on the event loop thread, one call at a time; each must
// answer quickly (the runtime gives the plugin 2 s per call, and container creation on the
// whole node waits for it). An error Status is sent back to the runtime with its code and
// message; for CreateContainer that fails the container's creation with that message.
class PluginHandler {
 public:
  virtual ~PluginHandler() = default;

  // The runtime's identity and limits; returns the events to subscribe to (a non-zero mask
  // within kEventsValidOnOldRuntimes; 0 would mean "everything" to the runtime, so it is
  // refused by the adapter).
  virtual Result<EventMask> Configure(const RuntimeInfo& runtime) = 0;

  // Every pod and container the runtime has (chunks already joined). Returns updates that
  // re-assert cpusets after a plugin or runtime restart.
  virtual Result<std::vector<CpusetUpdate>> Synchronize(
      const std::vector<Pod>& pods, const std::vector<Container>& containers) = 0;

  virtual Result<CreateContainerResult> CreateContainer(const Pod& pod,
                                                        const Container& container) = 0;
  // `requested` is the cpuset the update wants to apply. An update naming this container is
  // merged into the runtime's pending update (use it to re-assert our cpuset).
  virtual Result<std::vector<CpusetUpdate>> UpdateContainer(const Pod& pod,
                                                            const Container& container,
                                                            const Cpuset& requested) = 0;
  virtual Result<std::vector<CpusetUpdate>> StopContainer(const Pod& pod,
                                                          const Container& container) = 0;
  // Dedicated RPC (NRI >= 0.12) or StateChange(REMOVE_CONTAINER) on older runtimes.
  virtual Status RemoveContainer(const Pod& pod, const Container& container) = 0;

  // The connection is gone (runtime closed it, registration failed, protocol error, or the
  // agent closed it). Nothing else is called afterwards. Runs inside the Plugin: do not destroy
  // it from here; Post that (and the reconnect) to the loop. Not called when the Plugin is
  // destroyed while connected.
  virtual void Disconnected(const Status& reason) = 0;
};

}  // namespace dracpu::nri
