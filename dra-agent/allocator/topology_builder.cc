#include "dra-agent/allocator/topology_builder.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace dracpu::allocator {
namespace {

std::string CpuName(int cpu) { return "cpu " + std::to_string(cpu); }

}  // namespace

Result<CpuTopology> BuildTopologyFromRecords(const std::vector<CpuRecord>& records) {
  if (records.empty()) return InvalidArgumentError("topology has no CPUs");
  std::vector<CpuRecord> sorted = records;
  std::sort(sorted.begin(), sorted.end(),
            [](const CpuRecord& a, const CpuRecord& b) { return a.cpu < b.cpu; });

  CpuTopology topo;
  std::map<int, const CpuRecord*> core_first;  // record core id -> first (lowest) CPU's record
  std::map<int, CpuSet> core_cpus;
  std::map<int, std::set<int>> l3_sockets;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const CpuRecord& r = sorted[i];
    if (r.cpu < 0 || r.cpu >= CpuSet::kMaxCpus) {
      return InvalidArgumentError(CpuName(r.cpu) + ": id out of range [0, " +
                                  std::to_string(CpuSet::kMaxCpus) + ")");
    }
    if (i > 0 && sorted[i - 1].cpu == r.cpu) {
      return InvalidArgumentError(CpuName(r.cpu) + " is listed more than once");
    }
    if (r.core < 0) return InvalidArgumentError(CpuName(r.cpu) + ": negative core id");
    if (r.socket < 0) return InvalidArgumentError(CpuName(r.cpu) + ": negative socket id");
    if (r.numa < -1 || r.l3 < -1) {
      return InvalidArgumentError(CpuName(r.cpu) + ": numa and l3 must be >= -1");
    }
    auto [it, inserted] = core_first.emplace(r.core, &r);
    if (!inserted) {
      const CpuRecord& f = *it->second;
      if (f.socket != r.socket || f.numa != r.numa || f.type != r.type) {
        return InvalidArgumentError(CpuName(r.cpu) + " and " + CpuName(f.cpu) + " share core " +
                                    std::to_string(r.core) +
                                    " but differ in socket, NUMA node or core type");
      }
    }
    core_cpus[r.core].Set(r.cpu);
    if (r.l3 >= 0) l3_sockets[r.l3].insert(r.socket);
    topo.online.Set(r.cpu);
  }

  // L3 ids: keep the fixture's when each names one socket's cache, else renumber (socket, l3).
  bool l3_shared = false;
  for (const auto& [id, sockets] : l3_sockets) l3_shared |= sockets.size() > 1;
  std::map<std::pair<int, int>, int> l3_ids;  // (socket, l3) -> id in the topology
  for (const CpuRecord& r : sorted) {
    if (r.l3 >= 0) l3_ids.emplace(std::make_pair(r.socket, r.l3), r.l3);
  }
  if (l3_shared) {
    int next = 0;
    for (auto& [key, id] : l3_ids) id = next++;
    topo.warnings.emplace_back(
        "L3 ids are reused across sockets; L3 groups renumbered by (socket, l3)");
  }

  std::map<int, CpuSet> packages, numas, l3s;
  std::map<int, int> record_core_to_id;
  for (const auto& [record_core, cpus] : core_cpus) {
    const CpuRecord& f = *core_first[record_core];
    Core core;
    core.id = cpus.First();
    core.cpus = cpus;
    core.type = f.type;
    core.package = f.socket;
    topo.cores.push_back(core);
    record_core_to_id[record_core] = core.id;
  }
  std::sort(topo.cores.begin(), topo.cores.end(),
            [](const Core& a, const Core& b) { return a.id < b.id; });

  std::set<int> widths;
  for (const Core& core : topo.cores) widths.insert(core.cpus.Count());
  topo.threads_per_core.assign(widths.begin(), widths.end());
  topo.smt_enabled = *widths.rbegin() > 1;

  for (const CpuRecord& r : sorted) {
    CpuInfo info;
    info.id = r.cpu;
    info.package = r.socket;
    info.numa_node = r.numa;
    info.core = record_core_to_id[r.core];
    info.l3 = r.l3 >= 0 ? l3_ids[{r.socket, r.l3}] : -1;
    info.type = r.type;
    topo.cpus.push_back(info);
    packages[r.socket].Set(r.cpu);
    if (r.numa >= 0) numas[r.numa].Set(r.cpu);
    if (info.l3 >= 0) l3s[info.l3].Set(r.cpu);
  }
  for (const auto& [id, cpus] : packages) topo.packages.push_back({id, cpus});
  for (const auto& [id, cpus] : numas) topo.numa_nodes.push_back({id, cpus, {}});
  for (const auto& [id, cpus] : l3s) topo.l3_caches.push_back({id, cpus});
  topo.present = topo.online;
  topo.possible = topo.online;

  RETURN_IF_ERROR(topo.Validate());
  return topo;
}

}  // namespace dracpu::allocator
