// DraMetrics: every metric the dra-agent serves on /metrics, in one table, so the exposition and
// `dracpu-dra-agent introspect metrics` cannot drift apart.
//
// The reference driver's eight, with its names, label names and types (reference-driver.md
// §2.13): dra_cpu_allocated_cpus, dra_cpu_available_cpus, dra_cpu_reserved_cpus,
// dra_cpu_resource_claims_active (gauges), dra_cpu_prepare_claims_total{result} and
// dra_cpu_unprepare_claims_total{result} (counters; result = success, error or unknown, all
// three present from the start), dra_cpu_prepare_claim_duration_seconds (histogram; our buckets
// are a superset of the reference's, down to 100 µs) and dra_cpu_claim_allocated_cpus
// (histogram of the CPUs of each newly prepared claim, buckets 1, 2, 4 ... 1024). Ours:
// dra_cpu_unprepare_claim_duration_seconds, dracpu_resourceslices,
// dracpu_resourceslice_sync_errors_total, dracpu_devices{health} (devices by the health the
// kubelet's health stream reports; Healthy, Unhealthy and Unknown present from the start),
// dracpu_shared_pool_min_cpus, dracpu_nri_agent_heartbeat_age_seconds,
// dracpu_kubelet_cpu_manager_conflict (1 while the kubelet's static CPU Manager state is on the
// node: dra-agent/agent/kubelet_cpu_manager.h); and the process_* metrics of
// common/process_metrics.h.
//
// Thread safety: the Metric references may be used from any thread.
#pragma once

#include <vector>

#include "common/metrics.h"

namespace dracpu::dra {

class DraMetrics {
 public:
  // Registers every metric of Specs() in `registry` (which must outlive this object).
  explicit DraMetrics(MetricsRegistry& registry);
  DraMetrics(const DraMetrics&) = delete;
  DraMetrics& operator=(const DraMetrics&) = delete;

  // The dra-agent's own metrics, the reference's first, in exposition order.
  static const std::vector<MetricSpec>& Specs();

  // Values of the `result` label.
  static constexpr const char* kSuccess = "success";
  static constexpr const char* kError = "error";
  static constexpr const char* kUnknown = "unknown";

  Metric& allocated_cpus;
  Metric& available_cpus;
  Metric& reserved_cpus;
  Metric& claims_active;
  Metric& prepare_claims;
  Metric& unprepare_claims;
  Metric& prepare_seconds;
  Metric& claim_allocated_cpus;
  Metric& unprepare_seconds;
  Metric& resourceslices;
  Metric& resourceslice_sync_errors;
  Metric& devices_by_health;
  Metric& shared_pool_min_cpus;
  Metric& nri_heartbeat_age;
  Metric& kubelet_cpu_manager_conflict;
};

}  // namespace dracpu::dra
