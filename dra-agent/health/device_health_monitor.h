// DeviceHealthMonitor: the dra-agent's device health for the kubelet's health stream.
// A device is Healthy while every CPU behind it is online and the nri-agent (which enforces
// exclusivity) has a fresh heartbeat in shared memory; otherwise Unhealthy with a message naming
// the offline CPUs or how long the nri-agent has been silent. An nri-agent that never attached is
// given the grace period from the dra-agent's own start. A problem of the whole node (the
// kubelet's static CPU Manager, kubelet_cpu_manager.h) makes every device Unhealthy with its
// message.
// Thread safety: CurrentHealth may be called from several gRPC threads at once.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

#include "common/file_system.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/health/device_health.h"
#include "shm-schema/segment.h"

namespace dracpu::dra {

class DeviceHealthMonitor final : public DeviceHealthSource {
 public:
  // `boottime_now` returns CLOCK_BOOTTIME (the heartbeat's clock). References must outlive this.
  DeviceHealthMonitor(const DeviceCatalog& catalog, std::string pool, const FileSystem& sysfs,
                      const shm::Segment& segment, std::chrono::nanoseconds nri_silence_limit,
                      std::function<std::chrono::nanoseconds()> boottime_now,
                      std::function<std::string()> node_problem = {});

  std::vector<DeviceHealthReport> CurrentHealth() override;
  // While the nri-agent's heartbeat is fresh: until it would be `nri_silence_limit` old (so the
  // stream checks again exactly when the device could turn Unhealthy). Otherwise one second, to
  // see the nri-agent come back. CPU hotplug is an event: the agent's topology watcher calls
  // HealthStreamer::Notify.
  std::optional<std::chrono::milliseconds> StableFor() override;

 private:
  CpuSet OnlineCpus();
  // How long the nri-agent has been silent (its last heartbeat, or our start when later), or
  // the snapshot error.
  Result<std::chrono::nanoseconds> NriSilence(uint32_t* nri_pid) const;

  const DeviceCatalog& catalog_;
  const std::string pool_;
  const FileSystem& sysfs_;
  const shm::Segment& segment_;
  const std::chrono::nanoseconds limit_;
  const std::function<std::chrono::nanoseconds()> now_;
  const std::chrono::nanoseconds started_;
  const std::function<std::string()> node_problem_;  // "" = none; may be empty
  std::mutex mu_;
  CpuSet last_online_;  // guarded by mu_; kept when sysfs cannot be read
};

// CLOCK_BOOTTIME now.
std::chrono::nanoseconds BoottimeNow();

}  // namespace dracpu::dra
