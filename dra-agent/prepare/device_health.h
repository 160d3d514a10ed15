// DeviceHealthSource: the dra-agent's domain view of device health for the kubelet's health
// stream, free of gRPC types. A device is Healthy while its CPUs are online and the nri-agent's
// heartbeat is fresh; the implementation decides, the kubelet/ adapter only streams it.
#pragma once

#include <string>
#include <vector>

namespace dracpu::dra {

enum class DeviceHealthState { kUnknown = 0, kHealthy = 1, kUnhealthy = 2 };

struct DeviceHealthReport {
  std::string pool_name;
  std::string device_name;
  DeviceHealthState state = DeviceHealthState::kUnknown;
  std::string message;  // why; at most 1024 characters are sent

  friend bool operator==(const DeviceHealthReport&, const DeviceHealthReport&) = default;
};

class DeviceHealthSource {
 public:
  virtual ~DeviceHealthSource() = default;
  // Every device's current health. Called from gRPC threads; must be thread-safe and cheap.
  virtual std::vector<DeviceHealthReport> CurrentHealth() = 0;
};

}  // namespace dracpu::dra
