// DeviceHealthSource: the dra-agent's domain view of device health for the kubelet's health
// stream, free of gRPC types. A device is Healthy while its CPUs are online and the nri-agent's
// heartbeat is fresh; the implementation decides, the kubelet/ adapter only streams it.
#pragma once

#include <chrono>
#include <optional>
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
  // How long the current health is sure to stay as it is unless an event says otherwise (the
  // stream is told of events through HealthStreamer::Notify). The health stream checks again
  // after at most this long instead of polling. nullopt: the source cannot tell; the stream
  // polls at its poll interval.
  virtual std::optional<std::chrono::milliseconds> StableFor() { return std::nullopt; }
};

}  // namespace dracpu::dra
