#include "dra-agent/metrics/dra_metrics.h"

namespace dracpu::dra {
namespace {

using Kind = Metric::Kind;

enum Index {
  kAllocated,
  kAvailable,
  kReserved,
  kActive,
  kPrepareTotal,
  kUnprepareTotal,
  kPrepareSeconds,
  kClaimCpus,
  kUnprepareSeconds,
  kSlices,
  kSliceErrors,
  kDevicesByHealth,
  kSharedPoolMin,
  kNriHeartbeatAge,
  kKubeletCpuManagerConflict,
};

}  // namespace

const std::vector<MetricSpec>& DraMetrics::Specs() {
  static const auto* specs = new std::vector<MetricSpec>{
      {Kind::kGauge, "dra_cpu_allocated_cpus", "CPUs held by prepared claims.", {}, {}},
      {Kind::kGauge,
       "dra_cpu_available_cpus",
       "CPUs in the shared pool: allocatable CPUs that no prepared claim holds.",
       {},
       {}},
      {Kind::kGauge,
       "dra_cpu_reserved_cpus",
       "CPUs in reservedCPUs, never given to a claim.",
       {},
       {}},
      {Kind::kGauge, "dra_cpu_resource_claims_active", "Claims prepared on this node.", {}, {}},
      {Kind::kCounter,
       "dra_cpu_prepare_claims_total",
       "Claims handled by NodePrepareResources, by result.",
       {"result"},
       {}},
      {Kind::kCounter,
       "dra_cpu_unprepare_claims_total",
       "Claims handled by NodeUnprepareResources, by result.",
       {"result"},
       {}},
      {Kind::kHistogram,
       "dra_cpu_prepare_claim_duration_seconds",
       "Time to prepare one claim, in seconds.",
       {},
       LatencyBuckets()},
      {Kind::kHistogram,
       "dra_cpu_claim_allocated_cpus",
       "CPUs granted to each newly prepared claim.",
       {},
       {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}},
      {Kind::kHistogram,
       "dra_cpu_unprepare_claim_duration_seconds",
       "Time to unprepare one claim, in seconds.",
       {},
       LatencyBuckets()},
      {Kind::kGauge,
       "dracpu_resourceslices",
       "ResourceSlices published by the last successful sync.",
       {},
       {}},
      {Kind::kCounter,
       "dracpu_resourceslice_sync_errors_total",
       "Failed ResourceSlice syncs.",
       {},
       {}},
      {Kind::kGauge,
       "dracpu_devices",
       "Devices by the health the kubelet's health stream reports.",
       {"health"},
       {}},
      {Kind::kGauge,
       "dracpu_shared_pool_min_cpus",
       "The shared-pool floor claims may not take (minSharedCPUs).",
       {},
       {}},
      {Kind::kGauge,
       "dracpu_nri_agent_heartbeat_age_seconds",
       "Seconds since the nri-agent's last heartbeat in shared memory (since this agent's start "
       "when it never beat).",
       {},
       {}},
      {Kind::kGauge,
       "dracpu_kubelet_cpu_manager_conflict",
       "1 while the kubelet's CPU Manager state file names a policy other than none (it "
       "rewrites container cpusets and undoes dracpu's pinning), else 0.",
       {},
       {}},
  };
  return *specs;
}

DraMetrics::DraMetrics(MetricsRegistry& r)
    : allocated_cpus(r.Add(Specs()[kAllocated])),
      available_cpus(r.Add(Specs()[kAvailable])),
      reserved_cpus(r.Add(Specs()[kReserved])),
      claims_active(r.Add(Specs()[kActive])),
      prepare_claims(r.Add(Specs()[kPrepareTotal])),
      unprepare_claims(r.Add(Specs()[kUnprepareTotal])),
      prepare_seconds(r.Add(Specs()[kPrepareSeconds])),
      claim_allocated_cpus(r.Add(Specs()[kClaimCpus])),
      unprepare_seconds(r.Add(Specs()[kUnprepareSeconds])),
      resourceslices(r.Add(Specs()[kSlices])),
      resourceslice_sync_errors(r.Add(Specs()[kSliceErrors])),
      devices_by_health(r.Add(Specs()[kDevicesByHealth])),
      shared_pool_min_cpus(r.Add(Specs()[kSharedPoolMin])),
      nri_heartbeat_age(r.Add(Specs()[kNriHeartbeatAge])),
      kubelet_cpu_manager_conflict(r.Add(Specs()[kKubeletCpuManagerConflict])) {
  for (const char* result : {kSuccess, kError, kUnknown}) {
    prepare_claims.Add({result}, 0);
    unprepare_claims.Add({result}, 0);
  }
  for (const char* health : {"Healthy", "Unhealthy", "Unknown"}) devices_by_health.Set({health}, 0);
}

}  // namespace dracpu::dra
