#include "dra-agent/health/device_health_monitor.h"

#include <time.h>

namespace dracpu::dra {

std::chrono::nanoseconds BoottimeNow() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

DeviceHealthMonitor::DeviceHealthMonitor(const DeviceCatalog& catalog, std::string pool,
                                         const FileSystem& sysfs, const shm::Segment& segment,
                                         std::chrono::nanoseconds nri_silence_limit,
                                         std::function<std::chrono::nanoseconds()> boottime_now,
                                         std::function<std::string()> node_problem)
    : catalog_(catalog),
      pool_(std::move(pool)),
      sysfs_(sysfs),
      segment_(segment),
      limit_(nri_silence_limit),
      now_(std::move(boottime_now)),
      started_(now_()),
      node_problem_(std::move(node_problem)),
      last_online_(catalog.allocatable) {}

CpuSet DeviceHealthMonitor::OnlineCpus() {
  std::lock_guard lock(mu_);
  auto text = sysfs_.ReadFile("sys/devices/system/cpu/online", 4096);
  if (text.ok()) {
    if (auto set = CpuSet::ParseList(TrimTrailingNewline(*text)); set.ok()) last_online_ = *set;
  }
  return last_online_;
}

Result<std::chrono::nanoseconds> DeviceHealthMonitor::NriSilence(uint32_t* nri_pid) const {
  shm::SnapshotOptions options;
  options.claims = false;
  options.containers = false;
  ASSIGN_OR_RETURN(shm::Snapshot snapshot, segment_.ReadSnapshot(options));
  const auto& nri = snapshot.agents[static_cast<int>(shm::Role::kNriAgent)];
  *nri_pid = nri.pid;
  const std::chrono::nanoseconds beat(nri.heartbeat_ns);
  return now_() - std::max(beat, started_);
}

std::optional<std::chrono::milliseconds> DeviceHealthMonitor::StableFor() {
  constexpr std::chrono::milliseconds kWhileSilent{1000};
  uint32_t pid = 0;
  auto since = NriSilence(&pid);
  if (!since.ok() || *since > limit_) return kWhileSilent;
  // Rounded up, so the next check is just past the limit rather than just before it.
  return std::chrono::ceil<std::chrono::milliseconds>(limit_ - *since) +
         std::chrono::milliseconds(1);
}

std::vector<DeviceHealthReport> DeviceHealthMonitor::CurrentHealth() {
  const CpuSet online = OnlineCpus();
  std::string nri_problem;
  uint32_t nri_pid = 0;
  auto since = NriSilence(&nri_pid);
  if (!since.ok()) {
    nri_problem = "shared memory unreadable: " + since.status().message();
  } else if (*since > limit_) {
    nri_problem =
        nri_pid == 0 ? "the nri-agent has not attached for " : "the nri-agent has been silent for ";
    nri_problem +=
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(*since).count()) +
        " s; CPU exclusivity is not enforced";
  }
  const std::string node_problem = node_problem_ ? node_problem_() : "";
  std::vector<DeviceHealthReport> out;
  out.reserve(catalog_.devices.size());
  for (const CatalogDevice& d : catalog_.devices) {
    DeviceHealthReport r{pool_, d.name, DeviceHealthState::kHealthy, ""};
    const CpuSet offline = d.group_cpus - online;
    if (!offline.Empty()) {
      r.state = DeviceHealthState::kUnhealthy;
      r.message = "CPUs " + offline.ToListString() + " are offline";
    } else if (!node_problem.empty()) {
      r.state = DeviceHealthState::kUnhealthy;
      r.message = node_problem;
    } else if (!nri_problem.empty()) {
      r.state = DeviceHealthState::kUnhealthy;
      r.message = nri_problem;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace dracpu::dra
