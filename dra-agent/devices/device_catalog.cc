#include "dra-agent/devices/device_catalog.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace dracpu::dra {
namespace {

std::string Numbered(const char* prefix, int n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%03d", prefix, n);
  return buf;
}

// PCIe roots local to any CPU of `cpus`, sorted by name.
std::vector<std::string> PcieRootsOf(const CpuTopology& t, const CpuSet& cpus) {
  std::vector<std::string> roots;
  for (const PcieRoot& r : t.pcie_roots) {
    if (r.cpus.Intersects(cpus)) roots.push_back(r.name);
  }
  std::sort(roots.begin(), roots.end());
  return roots;
}

void AddPcieRoots(const CpuTopology& t, const CatalogOptions& o, CatalogDevice& d,
                  const CpuSet& cpus) {
  if (!o.expose_pcie_roots) return;
  std::vector<std::string> roots = PcieRootsOf(t, cpus);
  // The API refuses an empty list value ("must be a non-empty list"): a device without a local
  // PCIe root (no PCI data, or a CPU-only node) simply has no pcieRoot attribute.
  if (roots.empty()) return;
  d.attributes["resource.kubernetes.io/pcieRoot"] = std::move(roots);
  d.uses_list_attributes = true;
}

int64_t GranuleFor(const CpuTopology& t, const CatalogOptions& o) {
  return o.full_pcpus_only ? std::max(1, t.MaxThreadsPerCore()) : 1;
}

int SocketOf(const CpuTopology& t, const CpuSet& cpus) {
  const CpuInfo* info = t.FindCpu(cpus.First());
  return info ? info->package : -1;
}

// Grouped devices: one per group with allocatable CPUs; the floor comes out of the first ones.
Status BuildGrouped(const CpuTopology& t, const CatalogOptions& o, int floor_needed,
                    DeviceCatalog& catalog) {
  struct Group {
    std::string name;
    int id;
    CpuSet cpus;
  };
  std::vector<Group> groups;
  switch (o.group_by) {
    case GroupBy::kNumaNode:
      for (const NumaNode& n : t.numa_nodes) {
        groups.push_back({NumaDeviceName(n.id), n.id, n.cpus & catalog.allocatable});
      }
      break;
    case GroupBy::kSocket:
      for (const CpuGroup& p : t.packages) {
        groups.push_back({SocketDeviceName(p.id), p.id, p.cpus & catalog.allocatable});
      }
      break;
    case GroupBy::kMachine:
      groups.push_back({"cpudevmachine", -1, catalog.allocatable});
      break;
  }
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return a.name < b.name; });
  const int64_t granule = GranuleFor(t, o);
  for (const Group& g : groups) {
    if (g.cpus.Empty()) continue;
    CatalogDevice d;
    d.name = g.name;
    d.group_cpus = g.cpus;
    d.cpus = g.cpus;
    int capacity = g.cpus.Count();
    const int taken = std::min(floor_needed, capacity);
    capacity -= taken;
    floor_needed -= taken;
    // Under fullPCPUsOnly only whole cores can be granted: round the capacity down to the step.
    capacity -= capacity % static_cast<int>(granule);
    const std::optional<CapacityPolicy> policy = MakeCapacityPolicy(capacity, granule);
    if (!policy) continue;  // nothing left to grant on this group
    d.cpu_capacity = capacity;
    d.capacity_policy = policy;
    d.allow_multiple_allocations = true;
    const bool smt = t.smt_enabled;
    switch (o.group_by) {
      case GroupBy::kNumaNode:
        d.attributes["resource.kubernetes.io/numaNode"] = int64_t{g.id};
        d.attributes["dra.cpu/numaNodeID"] = int64_t{g.id};
        d.attributes["dra.net/numaNode"] = int64_t{g.id};
        d.attributes["dra.cpu/socketID"] = int64_t{SocketOf(t, g.cpus)};
        break;
      case GroupBy::kSocket:
        d.attributes["dra.cpu/socketID"] = int64_t{g.id};
        break;
      case GroupBy::kMachine:
        break;
    }
    d.attributes["dra.cpu/smtEnabled"] = smt;
    d.attributes["dra.cpu/numCPUs"] = int64_t{capacity};
    AddPcieRoots(t, o, d, g.cpus);
    catalog.devices.push_back(std::move(d));
  }
  return Status::Ok();
}

void BuildIndividual(const CpuTopology& t, const CatalogOptions& o, int floor_needed,
                     DeviceCatalog& catalog) {
  // The floor: the lowest allocatable CPUs stay unpublished (CPU 0 usually hosts housekeeping).
  for (int cpu : catalog.allocatable) {
    if (floor_needed-- <= 0) break;
    catalog.floor.Set(cpu);
  }
  const CpuSet published = catalog.allocatable - catalog.floor;
  std::map<int, CpuSet> core_cpus;  // core id -> its published threads
  for (const Core& core : t.cores) core_cpus[core.id] = core.cpus & published;
  CpuSet visited;
  int index = 0;
  for (int cpu : published) {
    if (visited.Contains(cpu)) continue;
    const CpuInfo* info = t.FindCpu(cpu);
    CpuSet siblings{cpu};
    if (auto it = core_cpus.find(info->core); it != core_cpus.end()) siblings |= it->second;
    for (int member : siblings) {
      if (visited.Contains(member)) continue;
      visited.Set(member);
      const CpuInfo* m = t.FindCpu(member);
      CatalogDevice d;
      d.name = IndividualDeviceName(index++);
      d.cpus = CpuSet{member};
      d.group_cpus = d.cpus;
      d.attributes["resource.kubernetes.io/numaNode"] = int64_t{m->numa_node};
      d.attributes["dra.cpu/numaNodeID"] = int64_t{m->numa_node};
      d.attributes["dra.net/numaNode"] = int64_t{m->numa_node};
      d.attributes["dra.cpu/socketID"] = int64_t{m->package};
      d.attributes["dra.cpu/smtEnabled"] = t.smt_enabled;
      d.attributes["dra.cpu/cacheL3ID"] = int64_t{m->l3};
      d.attributes["dra.cpu/coreType"] = std::string(CoreTypeName(m->type));
      d.attributes["dra.cpu/coreID"] = int64_t{m->core};
      d.attributes["dra.cpu/cpuID"] = int64_t{member};
      AddPcieRoots(t, o, d, d.cpus);
      catalog.devices.push_back(std::move(d));
    }
  }
}

}  // namespace

void KeepStartupDeviceNames(const DeviceCatalog& startup, DeviceCatalog& rebuilt) {
  if (rebuilt.options.mode != CpuDeviceMode::kIndividual) return;
  std::map<std::string, size_t> index;  // the start-up device's CPU list -> its position
  for (size_t i = 0; i < startup.devices.size(); ++i)
    index[startup.devices[i].cpus.ToListString()] = i;
  std::vector<std::pair<size_t, CatalogDevice>> kept;
  for (CatalogDevice& d : rebuilt.devices) {
    auto it = index.find(d.cpus.ToListString());
    if (it == index.end()) continue;
    d.name = startup.devices[it->second].name;
    kept.emplace_back(it->second, std::move(d));
  }
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  rebuilt.devices.clear();
  for (auto& [i, d] : kept) rebuilt.devices.push_back(std::move(d));
}

std::optional<CapacityPolicy> MakeCapacityPolicy(int64_t capacity, int64_t granule) {
  if (granule < 1 || capacity < granule) return std::nullopt;
  CapacityPolicy p;
  p.min = granule;
  p.max = capacity - (capacity - p.min) % granule;  // the largest whole number of units
  // Upstream refuses a step with min + step > capacity ("one step ... is larger than capacity
  // value"): a one-value range has no step.
  if (p.min + granule <= capacity) p.step = granule;
  p.default_value = p.max;
  return p;
}

std::string NumaDeviceName(int numa_node) { return Numbered("cpudevnuma", numa_node); }
std::string SocketDeviceName(int socket) { return Numbered("cpudevsocket", socket); }
std::string IndividualDeviceName(int index) { return Numbered("cpudev", index); }

const CatalogDevice* DeviceCatalog::Find(std::string_view name) const {
  for (const CatalogDevice& d : devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

Result<DeviceCatalog> BuildDeviceCatalog(const CpuTopology& topology,
                                         const CatalogOptions& options) {
  DeviceCatalog catalog;
  catalog.options = options;
  catalog.allocatable = topology.online - options.reserved;
  const int reserved_sharing =
      options.strict_cpu_reservation ? 0 : (options.reserved & topology.online).Count();
  const int floor_needed = std::max(0, options.min_shared_cpus - reserved_sharing);
  if (catalog.allocatable.Count() < floor_needed) {
    return FailedPreconditionError(
        "only " + std::to_string(catalog.allocatable.Count()) + " allocatable CPUs (online " +
        topology.online.ToListString() + " minus reserved " + options.reserved.ToListString() +
        "), fewer than minSharedCPUs " + std::to_string(options.min_shared_cpus));
  }
  if (options.mode == CpuDeviceMode::kIndividual) {
    BuildIndividual(topology, options, floor_needed, catalog);
  } else {
    RETURN_IF_ERROR(BuildGrouped(topology, options, floor_needed, catalog));
  }
  return catalog;
}

}  // namespace dracpu::dra
