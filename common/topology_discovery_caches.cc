// L2/L3 groups and PCIe roots for DiscoverTopology; rules in docs/topology.md.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/sysfs_attribute.h"
#include "common/topology_discovery_internal.h"

namespace dracpu::topology_internal {
namespace {

// The groups of one cache level, keyed by CPU set.
struct LevelGroups {
  std::map<CpuSet, int> kernel_id;  // group -> cache `id` file value, -1 when absent or mixed
  PerCpu member_of = PerCpu(CpuSet::kMaxCpus, -1);  // cpu -> index into `sets`
  std::vector<CpuSet> sets;
  std::map<CpuSet, int> index_of;
  bool seen = false;  // some CPU has a cache at this level

  // `cpu` reported `cpus` (which contains it). Its own reading names its group; the other
  // members get this group until they report their own.
  void Add(int cpu, const CpuSet& cpus, int id) {
    seen = true;
    auto [it, inserted] = kernel_id.emplace(cpus, id);
    if (!inserted && it->second != id) it->second = -1;
    auto [idx, new_set] = index_of.emplace(cpus, static_cast<int>(sets.size()));
    if (new_set) sets.push_back(cpus);
    for (const int member : cpus) {
      if (member_of[member] < 0) member_of[member] = idx->second;
    }
    member_of[cpu] = idx->second;
  }
  // Whether `cpu` is already in a group reported by another CPU (or the level does not exist so
  // far, which is the same on a machine whose caches nest).
  bool Covers(int cpu) const { return !seen || member_of[cpu] >= 0; }
};

// Group ids: the kernel's cache `id` when every group has one and they are distinct, else the
// lowest CPU of each group (ids must name groups uniquely; old kernels and many Arm systems
// have no `id` file).
std::vector<CpuGroup> NameGroups(const LevelGroups& level, const CpuSet& online, const char* name,
                                 std::vector<std::string>& warnings, PerCpu& group_of) {
  bool use_kernel_ids = true;
  bool some_ids = false;
  std::set<int> seen;
  for (const auto& [cpus, id] : level.kernel_id) {
    if (id < 0 || !seen.insert(id).second) use_kernel_ids = false;
    some_ids |= id >= 0;
  }
  if (!use_kernel_ids && some_ids) {
    warnings.push_back(std::string(name) +
                       " cache ids are missing or shared by different CPU sets: groups are "
                       "named by their lowest CPU");
  }
  std::vector<CpuGroup> groups;
  std::vector<int> id_of_set(level.sets.size());
  for (size_t i = 0; i < level.sets.size(); ++i) {
    const CpuSet& cpus = level.sets[i];
    id_of_set[i] = use_kernel_ids ? level.kernel_id.at(cpus) : cpus.First();
    groups.push_back(CpuGroup{id_of_set[i], cpus});
  }
  std::sort(groups.begin(), groups.end(),
            [](const CpuGroup& a, const CpuGroup& b) { return a.id < b.id; });
  for (const int cpu : online) {
    if (level.member_of[cpu] >= 0) group_of[cpu] = id_of_set[level.member_of[cpu]];
  }
  return groups;
}

}  // namespace

Status DiscoverCaches(const FileSystem& fs, CpuTopology& topo, PerCpu& l2_of, PerCpu& l3_of) {
  LevelGroups l2;
  LevelGroups l3;
  for (const int cpu : topo.online) {
    // The kernel builds shared_cpu_map symmetrically, so a CPU already inside an L2 and an L3
    // group reported by a lower CPU has nothing new to say: skipping it divides the reads by
    // the group size (on POWER7 SMT4 by four).
    if (l2.Covers(cpu) && l3.Covers(cpu) && (l2.seen || l3.seen)) continue;
    const std::string cache_dir = CpuPath(cpu) + "/cache";
    Result<std::vector<int>> indexes = ListIndexedDirectories(fs, cache_dir, "index");
    if (!indexes.ok()) {
      if (indexes.status().code() == StatusCode::kNotFound) continue;  // no cache info
      return indexes.status();
    }
    for (const int index : *indexes) {
      const std::string dir = cache_dir + "/index" + std::to_string(index) + "/";
      Result<int> level = ReadSysfsInt(fs, dir + "level");
      if (!level.ok()) {
        if (level.status().code() == StatusCode::kNotFound) continue;
        return level.status();
      }
      if (*level != 2 && *level != 3) continue;
      // A split L2 (separate instruction cache) would otherwise count twice; keep data/unified.
      Result<std::string> type = ReadSysfsWord(fs, dir + "type");
      if (type.ok() && *type == "Instruction") continue;
      if (!type.ok() && type.status().code() != StatusCode::kNotFound) return type.status();
      Result<CpuSet> shared =
          ReadSysfsCpuListOrMask(fs, dir + "shared_cpu_list", dir + "shared_cpu_map");
      if (!shared.ok()) {
        if (shared.status().code() != StatusCode::kNotFound) return shared.status();
        shared = CpuSet{cpu};
      }
      CpuSet cpus = *shared & topo.online;
      cpus.Set(cpu);  // a cache is always shared with the CPU it describes
      Result<int> id = ReadSysfsInt(fs, dir + "id");
      if (!id.ok() && id.status().code() != StatusCode::kNotFound) return id.status();
      (*level == 2 ? l2 : l3).Add(cpu, cpus, id.ok() ? *id : -1);
    }
  }
  topo.l2_caches = NameGroups(l2, topo.online, "L2", topo.warnings, l2_of);
  topo.l3_caches = NameGroups(l3, topo.online, "L3", topo.warnings, l3_of);
  return Status::Ok();
}

namespace {

// "pci0000:00" -> "0000:00"; "" when the name is not pci + 4 hex + ':' + 2 hex.
std::string RootBus(std::string_view name) {
  if (name.size() != 10 || name.substr(0, 3) != "pci" || name[7] != ':') return "";
  for (size_t i = 3; i < name.size(); ++i) {
    if (i == 7) continue;
    const char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  }
  return std::string(name.substr(3));
}

}  // namespace

Status DiscoverPcieRoots(const FileSystem& fs, CpuTopology& topo) {
  Result<std::vector<DirEntry>> entries = fs.ListDirectory("sys/devices");
  if (!entries.ok()) {
    if (entries.status().code() == StatusCode::kNotFound) return Status::Ok();
    return entries.status();
  }
  std::vector<std::string> without_locality;
  for (const DirEntry& e : *entries) {
    const std::string bus = RootBus(e.name);
    if (bus.empty()) continue;
    const std::string root = "sys/devices/" + e.name;
    const std::string bus_dir = root + "/pci_bus/" + bus + "/";
    Result<CpuSet> cpus =
        ReadSysfsCpuListOrMask(fs, bus_dir + "cpulistaffinity", bus_dir + "cpuaffinity");
    if (!cpus.ok() && cpus.status().code() != StatusCode::kNotFound) return cpus.status();
    if (!cpus.ok()) {
      // Pruned trees (and some firmware) lack the root bus files: fall back to the union of the
      // local CPUs of the devices directly below the root.
      Result<std::vector<DirEntry>> devices = fs.ListDirectory(root);
      if (!devices.ok()) return devices.status();
      CpuSet local;
      bool any = false;
      for (const DirEntry& d : *devices) {
        if (d.name.size() != 12 || d.name.compare(0, 7, bus) != 0 || d.name[7] != ':') continue;
        const std::string dev = root + "/" + d.name + "/";
        Result<CpuSet> dev_cpus =
            ReadSysfsCpuListOrMask(fs, dev + "local_cpulist", dev + "local_cpus");
        if (!dev_cpus.ok()) {
          if (dev_cpus.status().code() == StatusCode::kNotFound) continue;
          return dev_cpus.status();
        }
        local |= *dev_cpus;
        any = true;
      }
      if (!any) {
        without_locality.push_back(e.name);
        continue;
      }
      cpus = local;
    }
    topo.pcie_roots.push_back(PcieRoot{e.name, *cpus & topo.online});
  }
  if (!without_locality.empty()) {
    std::string names;
    for (const std::string& n : without_locality) names += (names.empty() ? "" : ", ") + n;
    topo.warnings.push_back("PCIe roots without CPU locality (not reported): " + names);
  }
  std::sort(topo.pcie_roots.begin(), topo.pcie_roots.end(),
            [](const PcieRoot& a, const PcieRoot& b) { return a.name < b.name; });
  return Status::Ok();
}

}  // namespace dracpu::topology_internal
