#include "dra-agent/agent/status_reporting_claim_preparer.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <set>

namespace dracpu::dra {

std::string ClaimDeviceData(const CpuTopology& topology, const CpuSet& claim_cpus,
                            const CpuSet& device_cpus) {
  CpuSet cpus = claim_cpus & device_cpus;
  if (cpus.Empty()) cpus = claim_cpus;
  std::set<int> nodes;
  std::set<CoreType> types;
  for (int cpu : cpus) {
    if (const CpuInfo* info = topology.FindCpu(cpu); info != nullptr) {
      if (info->numa_node >= 0) nodes.insert(info->numa_node);
      types.insert(info->type);
    }
  }
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  w.StartObject();
  w.Key("cpus");
  w.String(cpus.ToListString().c_str());
  w.Key("numaNodes");
  w.StartArray();
  for (int n : nodes) w.Int(n);
  w.EndArray();
  if (!types.empty() && !types.count(CoreType::kStandard)) {
    w.Key("coreType");
    w.String(types.size() == 1 ? CoreTypeName(*types.begin()) : "mixed");
  }
  if (cpus != claim_cpus) {
    w.Key("claimCPUs");
    w.String(claim_cpus.ToListString().c_str());
  }
  w.EndObject();
  return std::string(b.GetString(), b.GetSize());
}

StatusReportingClaimPreparer::StatusReportingClaimPreparer(ClaimPreparer& inner,
                                                           ClaimStatusWriter& writer,
                                                           const CpuTopology& topology,
                                                           const DeviceCatalog& catalog,
                                                           CpusOf cpus_of)
    : inner_(inner),
      writer_(writer),
      topology_(topology),
      catalog_(catalog),
      cpus_of_(std::move(cpus_of)) {}

std::map<std::string, ClaimPrepareResult> StatusReportingClaimPreparer::Prepare(
    const std::vector<ClaimRef>& claims) {
  std::map<std::string, ClaimPrepareResult> out = inner_.Prepare(claims);
  for (const ClaimRef& ref : claims) {
    auto it = out.find(ref.uid);
    if (it == out.end() || !it->second.error.empty() || it->second.devices.empty()) continue;
    const std::optional<CpuSet> cpus = cpus_of_(ref.uid);
    if (!cpus) continue;
    ClaimStatusReport report{ref, {}};
    for (const PreparedDevice& d : it->second.devices) {
      const CatalogDevice* device = catalog_.Find(d.device_name);
      report.devices.push_back(
          {d.pool_name, d.device_name, d.share_id,
           ClaimDeviceData(topology_, *cpus, device != nullptr ? device->group_cpus : CpuSet())});
    }
    writer_.Report(std::move(report));
  }
  return out;
}

std::map<std::string, std::string> StatusReportingClaimPreparer::Unprepare(
    const std::vector<ClaimRef>& claims) {
  std::map<std::string, std::string> out = inner_.Unprepare(claims);
  for (const ClaimRef& ref : claims) {
    if (auto it = out.find(ref.uid); it != out.end() && it->second.empty()) {
      writer_.Report({ref, {}});
    }
  }
  return out;
}

}  // namespace dracpu::dra
