#include "common/cpu_topology.h"

#include <algorithm>

namespace dracpu {
namespace {

template <typename Group>
Status CheckGroupsOnline(const std::vector<Group>& groups, const CpuSet& online, const char* kind) {
  for (const Group& g : groups) {
    if (!g.cpus.IsSubsetOf(online)) {
      return InternalError(std::string(kind) + " " + std::to_string(g.id) +
                           " lists CPUs that are not online: " + (g.cpus - online).ToListString());
    }
  }
  return Status::Ok();
}

}  // namespace

const char* CoreTypeName(CoreType type) {
  switch (type) {
    case CoreType::kStandard:
      return "standard";
    case CoreType::kPerformance:
      return "p-core";
    case CoreType::kEfficiency:
      return "e-core";
  }
  return "standard";
}

const CpuInfo* CpuTopology::FindCpu(int cpu) const {
  auto it = std::lower_bound(cpus.begin(), cpus.end(), cpu,
                             [](const CpuInfo& info, int id) { return info.id < id; });
  if (it == cpus.end() || it->id != cpu) return nullptr;
  return &*it;
}

int CpuTopology::MaxThreadsPerCore() const {
  int max = 1;
  for (const Core& core : cores) max = std::max(max, core.cpus.Count());
  return max;
}

Status CpuTopology::Validate() const {
  RETURN_IF_ERROR(CheckGroupsOnline(packages, online, "package"));
  RETURN_IF_ERROR(CheckGroupsOnline(dies, online, "die"));
  RETURN_IF_ERROR(CheckGroupsOnline(clusters, online, "cluster"));
  RETURN_IF_ERROR(CheckGroupsOnline(numa_nodes, online, "NUMA node"));
  RETURN_IF_ERROR(CheckGroupsOnline(l3_caches, online, "L3 group"));
  RETURN_IF_ERROR(CheckGroupsOnline(l2_caches, online, "L2 group"));
  RETURN_IF_ERROR(CheckGroupsOnline(cores, online, "core"));
  CpuSet covered;
  for (const Core& core : cores) {
    if (core.cpus.Empty()) return InternalError("core " + std::to_string(core.id) + " is empty");
    if (core.cpus.First() != core.id) {
      return InternalError("core " + std::to_string(core.id) + " is not named by its lowest CPU " +
                           std::to_string(core.cpus.First()));
    }
    if (covered.Intersects(core.cpus)) {
      return InternalError("core " + std::to_string(core.id) + " overlaps another core");
    }
    covered |= core.cpus;
  }
  if (!(covered == online)) {
    return InternalError("cores do not cover the online CPUs exactly: missing " +
                         (online - covered).ToListString());
  }
  if (static_cast<int>(cpus.size()) != online.Count()) {
    return InternalError("cpus has " + std::to_string(cpus.size()) + " records for " +
                         std::to_string(online.Count()) + " online CPUs");
  }
  int previous = -1;
  for (const CpuInfo& info : cpus) {
    if (info.id <= previous)
      return InternalError("cpus is not sorted by id at " + std::to_string(info.id));
    previous = info.id;
    if (!online.Contains(info.id)) {
      return InternalError("cpu " + std::to_string(info.id) + " has a record but is not online");
    }
  }
  if (offline.Intersects(online)) {
    return InternalError("CPUs both online and offline: " + (offline & online).ToListString());
  }
  return Status::Ok();
}

}  // namespace dracpu
