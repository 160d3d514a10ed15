// StatusReportingClaimPreparer: a ClaimPreparer that forwards to another one and hands each
// claim it prepared or released to the ClaimStatusWriter (claim_status_writer.h), so the claim's
// status.devices shows its CPUs after Prepare and loses them after Unprepare. Only queues: the
// kubelet's answer never waits for the API server.
//
// ClaimDeviceData is the `data` of one device's entry: {"cpus": the claim's CPUs on the device,
// "numaNodes": their NUMA nodes, "coreType": "p-core"/"e-core" (hybrid parts only; "mixed" when
// a claim allowed both), "claimCPUs": all the claim's CPUs when they are not all on this device}.
//
// Thread safety: as the wrapped preparer; `cpus_of` must be safe for concurrent use.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/cpu_set.h"
#include "common/cpu_topology.h"
#include "dra-agent/agent/claim_status_writer.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/prepare/claim_preparer.h"

namespace dracpu::dra {

std::string ClaimDeviceData(const CpuTopology& topology, const CpuSet& claim_cpus,
                            const CpuSet& device_cpus);

class StatusReportingClaimPreparer final : public ClaimPreparer {
 public:
  // The claim's CPUs as recorded (nullopt: not recorded).
  using CpusOf = std::function<std::optional<CpuSet>(const std::string& uid)>;

  // Every reference is not owned and must outlive this.
  StatusReportingClaimPreparer(ClaimPreparer& inner, ClaimStatusWriter& writer,
                               const CpuTopology& topology, const DeviceCatalog& catalog,
                               CpusOf cpus_of);

  std::map<std::string, ClaimPrepareResult> Prepare(const std::vector<ClaimRef>& claims) override;
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override;

 private:
  ClaimPreparer& inner_;
  ClaimStatusWriter& writer_;
  const CpuTopology& topology_;
  const DeviceCatalog& catalog_;
  CpusOf cpus_of_;
};

}  // namespace dracpu::dra
