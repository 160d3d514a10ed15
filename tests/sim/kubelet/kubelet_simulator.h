// KubeletSimulator: behaves like the kubelet's plugin manager and DRA manager towards one DRA
// driver, for tests and `make demo` (protocols.md §5, §6):
//  * finds the driver's registration socket in a plugins_registry directory (polling, as the
//    kubelet's initial walk + inotify would, skipping dot files and non-sockets),
//  * GetInfo with a 1 s deadline, validates it like the kubelet (type DRAPlugin, name, a known
//    DRA version in supported_versions, picking the first it knows), then
//    NotifyRegistrationStatus(true) — or (false, reason) when validation fails,
//  * NodePrepareResources / NodeUnprepareResources over v1 or v1beta1 with the kubelet's 45 s
//    deadline, checking that every requested claim is answered,
//  * the health stream (v1alpha1.DRAResourceHealth).
// Not thread-safe: one simulator per test thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace dracpu::sim {

enum class DraApiVersion { kV1, kV1beta1 };

struct PluginRegistration {
  std::string registration_socket;
  std::string type;
  std::string name;
  std::string endpoint;
  std::vector<std::string> supported_versions;
  DraApiVersion chosen = DraApiVersion::kV1;
};

struct SimClaim {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

struct SimDevice {
  std::vector<std::string> request_names;
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;
};

struct SimPrepareResult {
  std::vector<SimDevice> devices;
  std::string error;
};

struct SimDeviceHealth {
  std::string pool_name;
  std::string device_name;
  std::string health;  // "Healthy", "Unhealthy", "Unknown"
  std::string message;
  int64_t timeout_seconds = 0;
};

class KubeletSimulator {
 public:
  // `registry_dir`: the plugins_registry directory to watch. `known_versions`: the DRA services
  // this kubelet knows, e.g. {"v1.DRAPlugin", "v1beta1.DRAPlugin"} (1.34+) or
  // {"v1beta1.DRAPlugin"} (1.32/1.33).
  KubeletSimulator(std::string registry_dir, std::vector<std::string> known_versions);
  ~KubeletSimulator();

  // Waits until a socket for `driver` appears and registration succeeds, or the timeout.
  // On a validation failure the driver is told (plugin_registered=false) and the error returned.
  Result<PluginRegistration> Register(const std::string& driver, std::chrono::milliseconds timeout);

  // The kubelet's periodic liveness probe: one GetInfo on the registered socket.
  Status ProbeRegistration();

  // Prepare/Unprepare on the registered endpoint with the chosen (or forced) version. A gRPC
  // error fails the whole call; a missing or unexpected claim in the answer is an error too.
  Result<std::map<std::string, SimPrepareResult>> Prepare(const std::vector<SimClaim>& claims);
  Result<std::map<std::string, std::string>> Unprepare(const std::vector<SimClaim>& claims);
  void ForceVersion(DraApiVersion version) {
    forced_ = version;
    forced_set_ = true;
  }

  // Opens the health stream and returns the first `count` updates (each a full device list),
  // or an error when the stream ends or the timeout passes first.
  Result<std::vector<std::vector<SimDeviceHealth>>> WatchHealth(int count,
                                                                std::chrono::milliseconds timeout);

 private:
  struct Channels;
  Result<PluginRegistration> TryRegister(const std::string& socket, const std::string& driver);
  DraApiVersion Version() const { return forced_set_ ? forced_ : registration_.chosen; }

  const std::string registry_dir_;
  const std::vector<std::string> known_versions_;
  PluginRegistration registration_;
  bool registered_ = false;
  DraApiVersion forced_ = DraApiVersion::kV1;
  bool forced_set_ = false;
  std::unique_ptr<Channels> channels_;
};

// "Healthy"/"Unhealthy"/"Unknown" for the proto enum value.
std::string HealthName(int value);

}  // namespace dracpu::sim
