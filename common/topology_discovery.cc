#include "common/topology_discovery.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/sysfs_attribute.h"
#include "common/topology_discovery_internal.h"

namespace dracpu {
namespace topology_internal {

int ParseIndexedName(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return -1;
  const std::string_view digits = name.substr(prefix.size());
  if (digits.size() > 1 && digits[0] == '0') return -1;
  if (digits.size() > 9) return -1;
  int value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::string CpuPath(int cpu) { return std::string(kCpuDir) + "/cpu" + std::to_string(cpu); }

Result<std::vector<int>> ListIndexedDirectories(const FileSystem& fs, const std::string& dir,
                                                std::string_view prefix) {
  ASSIGN_OR_RETURN(const std::vector<DirEntry> entries, fs.ListDirectory(dir));
  std::vector<int> ids;
  for (const DirEntry& e : entries) {
    const int id = ParseIndexedName(e.name, prefix);
    if (id < 0) continue;
    if (e.type == DirEntry::Type::kDirectory ||
        (e.type != DirEntry::Type::kFile && fs.IsDirectory(dir + "/" + e.name))) {
      ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace topology_internal

namespace {

using topology_internal::CpuPath;
using topology_internal::kCpuDir;
using topology_internal::PerCpu;

// A missing optional file is "absent" (std::nullopt-like -1 with found=false); any other error,
// including a malformed file, is returned.
Result<std::pair<bool, int>> ReadOptionalInt(const FileSystem& fs, const std::string& path) {
  Result<int> value = ReadSysfsInt(fs, path);
  if (value.ok()) return std::make_pair(true, *value);
  if (value.status().code() == StatusCode::kNotFound) return std::make_pair(false, -1);
  return value.status();
}

Result<std::pair<bool, CpuSet>> ReadOptionalList(const FileSystem& fs, const std::string& path) {
  Result<CpuSet> value = ReadSysfsCpuList(fs, path);
  if (value.ok()) return std::make_pair(true, *value);
  if (value.status().code() == StatusCode::kNotFound) return std::make_pair(false, CpuSet());
  return value.status();
}

// online / present / possible / offline / isolated. docs/topology.md "CPU sets".
Status DiscoverCpuSets(const FileSystem& fs, CpuTopology& topo) {
  Result<std::vector<int>> cpu_dirs = topology_internal::ListIndexedDirectories(fs, kCpuDir, "cpu");
  if (!cpu_dirs.ok()) return cpu_dirs.status();
  CpuSet dirs;
  for (const int cpu : *cpu_dirs) {
    if (cpu >= CpuSet::kMaxCpus) {
      return OutOfRangeError(fs.HostPath(CpuPath(cpu)) + ": CPU id beyond the maximum of " +
                             std::to_string(CpuSet::kMaxCpus - 1));
    }
    dirs.Set(cpu);
  }
  const std::string base = kCpuDir;
  ASSIGN_OR_RETURN(const auto online, ReadOptionalList(fs, base + "/online"));
  if (online.first) {
    topo.online = online.second;
  } else {
    // Old kernels (2.6.x) have no cpu/online: a CPU is online when the kernel gave it a topology/
    // directory, unless its own cpuN/online file says 0 (cpu0 has no such file: it cannot go down).
    for (const int cpu : dirs) {
      if (!fs.IsDirectory(CpuPath(cpu) + "/topology")) continue;
      ASSIGN_OR_RETURN(const auto flag, ReadOptionalInt(fs, CpuPath(cpu) + "/online"));
      if (flag.first && flag.second == 0) continue;
      topo.online.Set(cpu);
    }
    topo.warnings.push_back(
        "no cpu/online file: online CPUs are the cpuN directories with a topology/ directory "
        "(and no cpuN/online saying 0): " +
        topo.online.ToListString());
  }
  ASSIGN_OR_RETURN(const auto present, ReadOptionalList(fs, base + "/present"));
  topo.present = present.first ? present.second : (dirs | topo.online);
  ASSIGN_OR_RETURN(const auto possible, ReadOptionalList(fs, base + "/possible"));
  topo.possible = possible.first ? possible.second : (topo.present | topo.online);
  ASSIGN_OR_RETURN(const auto offline, ReadOptionalList(fs, base + "/offline"));
  topo.offline = offline.first ? offline.second : (topo.possible - topo.online);
  if (topo.offline.Intersects(topo.online)) {
    topo.warnings.push_back("cpu/offline lists online CPUs " +
                            (topo.offline & topo.online).ToListString() +
                            "; they are treated as online");
    topo.offline -= topo.online;
  }
  ASSIGN_OR_RETURN(const auto isolated, ReadOptionalList(fs, base + "/isolated"));
  topo.isolated = isolated.second;
  if (topo.online.Empty()) {
    return FailedPreconditionError(fs.HostPath(kCpuDir) + ": no online CPU found");
  }
  return Status::Ok();
}

struct CpuIds {
  int package = -1;
  bool has_die = false;
  int die = -1;
  bool has_cluster = false;
  int cluster = -1;
  int capacity = -1;
};

// The SMT siblings of `cpu` as the kernel gives them, newest name first: core_cpus_list
// (Linux 5.x), else its mask core_cpus, else thread_siblings_list, else thread_siblings.
// NOT_FOUND when none exists.
Result<CpuSet> ReadSiblingFiles(const FileSystem& fs, int cpu) {
  const std::string topo_dir = CpuPath(cpu) + "/topology/";
  Result<CpuSet> set =
      ReadSysfsCpuListOrMask(fs, topo_dir + "core_cpus_list", topo_dir + "core_cpus");
  if (set.ok() || set.status().code() != StatusCode::kNotFound) return set;
  return ReadSysfsCpuListOrMask(fs, topo_dir + "thread_siblings_list",
                                topo_dir + "thread_siblings");
}

// Without sibling files (a synthetic tree such as a sysfs overlay; no kernel since 2.6 omits
// them), the online CPUs from `cpu` up that also lack them and share its package, die, cluster
// and core_id, as the reference driver groups cores. Without a core_id: the CPU alone.
Result<CpuSet> SiblingsByCoreId(const FileSystem& fs, const CpuSet& online, int cpu) {
  auto identity = [&](int c) -> Result<std::tuple<bool, int, int, int, int>> {
    const std::string dir = CpuPath(c) + "/topology/";
    ASSIGN_OR_RETURN(const auto core, ReadOptionalInt(fs, dir + "core_id"));
    ASSIGN_OR_RETURN(const auto package, ReadOptionalInt(fs, dir + "physical_package_id"));
    ASSIGN_OR_RETURN(const auto die, ReadOptionalInt(fs, dir + "die_id"));
    ASSIGN_OR_RETURN(const auto cluster, ReadOptionalInt(fs, dir + "cluster_id"));
    return std::make_tuple(core.first, package.second, die.second, cluster.second, core.second);
  };
  ASSIGN_OR_RETURN(const auto mine, identity(cpu));
  CpuSet out{cpu};
  if (!std::get<0>(mine)) return out;
  for (const int other : online) {
    if (other <= cpu) continue;
    Result<CpuSet> files = ReadSiblingFiles(fs, other);
    if (files.ok() || files.status().code() != StatusCode::kNotFound) continue;
    ASSIGN_OR_RETURN(const auto theirs, identity(other));
    if (theirs == mine) out.Set(other);
  }
  return out;
}

// The SMT siblings of `cpu`: its sibling files, else SiblingsByCoreId. `found` is false when the
// CPU has no sibling files.
Result<CpuSet> ReadSiblings(const FileSystem& fs, const CpuSet& online, int cpu, bool& found) {
  found = true;
  Result<CpuSet> set = ReadSiblingFiles(fs, cpu);
  if (set.ok() || set.status().code() != StatusCode::kNotFound) return set;
  found = false;
  return SiblingsByCoreId(fs, online, cpu);
}

// Per-CPU ids, cores (keyed by sibling sets, never core_id), packages, dies, clusters.
Status DiscoverCpusAndCores(const FileSystem& fs, CpuTopology& topo, std::vector<CpuIds>& ids,
                            PerCpu& core_of) {
  std::vector<int> missing_topology;
  std::vector<int> missing_siblings;
  bool package_minus_one = false;
  for (const int cpu : topo.online) {
    CpuIds& id = ids[cpu];
    if (core_of[cpu] >= 0) {
      // Placed by a lower sibling: threads of one core share package, die, cluster and
      // capacity, so their files are not read again (a quarter of the reads on SMT4).
      id = ids[core_of[cpu]];
      continue;
    }
    const std::string topo_dir = CpuPath(cpu) + "/topology/";
    ASSIGN_OR_RETURN(const auto package, ReadOptionalInt(fs, topo_dir + "physical_package_id"));
    if (!package.first && !fs.IsDirectory(CpuPath(cpu) + "/topology")) {
      missing_topology.push_back(cpu);
    }
    id.package = package.second;
    if (id.package < 0) package_minus_one = true;
    ASSIGN_OR_RETURN(const auto die, ReadOptionalInt(fs, topo_dir + "die_id"));
    id.has_die = die.first;
    id.die = die.second;
    ASSIGN_OR_RETURN(const auto cluster, ReadOptionalInt(fs, topo_dir + "cluster_id"));
    // -1 (Arm without PPTT clusters) and 65535 (x86 BAD_APICID truncated) mean "no cluster".
    id.has_cluster = cluster.first && cluster.second >= 0 && cluster.second != 65535;
    id.cluster = id.has_cluster ? cluster.second : -1;
    ASSIGN_OR_RETURN(const auto capacity, ReadOptionalInt(fs, CpuPath(cpu) + "/cpu_capacity"));
    id.capacity = capacity.second;

    bool found = false;
    ASSIGN_OR_RETURN(CpuSet siblings, ReadSiblings(fs, topo.online, cpu, found));
    if (!found) missing_siblings.push_back(cpu);
    // Only online CPUs not yet in a core; the CPU itself always belongs to its own core.
    CpuSet wanted = siblings & topo.online;
    wanted.Set(cpu);
    CpuSet core_cpus = wanted;
    for (const int other : wanted) {
      if (core_of[other] >= 0) core_cpus.Clear(other);
    }
    if (!(core_cpus == wanted)) {
      topo.warnings.push_back("cpu" + std::to_string(cpu) + " siblings " + siblings.ToListString() +
                              " overlap the core of a lower CPU; cpu" + std::to_string(cpu) +
                              " gets " + core_cpus.ToListString());
    }
    const int core_id = core_cpus.First();
    for (const int member : core_cpus) core_of[member] = core_id;
    topo.cores.push_back(Core{core_id, core_cpus, CoreType::kStandard, -1});
  }
  auto join = [](const std::vector<int>& cpus) { return CpuSet::FromVector(cpus).ToListString(); };
  if (!missing_topology.empty()) {
    topo.warnings.push_back("online CPUs without a topology/ directory (each is its own core): " +
                            join(missing_topology));
  } else if (!missing_siblings.empty()) {
    topo.warnings.push_back(
        "online CPUs without sibling files (cores grouped by core_id, else one CPU each): " +
        join(missing_siblings));
  }

  // physical_package_id -1 (POWER pseries, some VMs and Arm boards) or missing: one package.
  if (package_minus_one) {
    std::set<int> used;
    for (const int cpu : topo.online) {
      if (ids[cpu].package >= 0) used.insert(ids[cpu].package);
    }
    const int package = used.empty() ? 0 : *used.rbegin() + 1;
    for (const int cpu : topo.online) {
      if (ids[cpu].package < 0) ids[cpu].package = package;
    }
    topo.warnings.push_back("physical_package_id is -1 or missing: those CPUs form one package " +
                            std::to_string(package));
  }

  std::map<int, CpuSet> packages;
  std::map<std::pair<int, int>, CpuSet> dies;
  std::map<std::pair<int, int>, CpuSet> clusters;
  for (const int cpu : topo.online) {
    const CpuIds& id = ids[cpu];
    packages[id.package].Set(cpu);
    if (id.has_die) dies[{id.package, id.die}].Set(cpu);
    if (id.has_cluster) clusters[{id.package, id.cluster}].Set(cpu);
  }
  for (const auto& [package, cpus] : packages) topo.packages.push_back(CpuGroup{package, cpus});
  for (const auto& [key, cpus] : dies) topo.dies.push_back(Die{key.first, key.second, cpus});
  for (const auto& [key, cpus] : clusters) {
    topo.clusters.push_back(Cluster{key.first, key.second, cpus});
  }
  std::sort(topo.cores.begin(), topo.cores.end(),
            [](const Core& a, const Core& b) { return a.id < b.id; });
  for (Core& core : topo.cores) core.package = ids[core.id].package;
  return Status::Ok();
}

// Arm big.LITTLE and DynamIQ parts have no PMU lists of core types; their cpu_capacity (the
// scheduler's relative performance, 1024 for the fastest) tells them apart. One core type may
// read as several close values, as the kernel scales capacity by each cluster's top frequency
// (NVIDIA GB10: 718 and 731 for its A725s, 997 to 1024 for its X925s), so sorted values within
// 10% of the previous one form one class. The highest class is p-core, every lower class e-core
// (a phone's A510 and A710 both e-core beside its X3); one class, or a CPU without the file, is a
// machine without core types.
void ClassifyByCapacity(const std::vector<CpuIds>& ids, CpuTopology& topo, PerCpu& type_of) {
  std::set<int> values;
  for (const int cpu : topo.online) {
    if (ids[cpu].capacity <= 0) return;
    values.insert(ids[cpu].capacity);
  }
  std::vector<int> class_floors;  // the lowest capacity of each class, ascending
  int previous = 0;
  for (const int v : values) {
    if (class_floors.empty() || int64_t{v} * 10 > int64_t{previous} * 11) class_floors.push_back(v);
    previous = v;
  }
  if (class_floors.size() < 2) return;
  CpuSet performance;
  for (const int cpu : topo.online) {
    const bool top = ids[cpu].capacity >= class_floors.back();
    type_of[cpu] = static_cast<int>(top ? CoreType::kPerformance : CoreType::kEfficiency);
    if (top) performance.Set(cpu);
  }
  if (class_floors.size() > 2) {
    topo.warnings.push_back("cpu_capacity has " + std::to_string(class_floors.size()) +
                            " classes: CPUs " + performance.ToListString() +
                            " (the highest) are p-core, the others e-core");
  }
}

// Intel hybrid: /sys/devices/cpu_core/cpus (P-cores) and /sys/devices/cpu_atom/cpus (E-cores);
// without them, Arm cpu_capacity classes.
Status DiscoverCoreTypes(const FileSystem& fs, const std::vector<CpuIds>& ids, CpuTopology& topo,
                         PerCpu& type_of) {
  ASSIGN_OR_RETURN(const auto atom, ReadOptionalList(fs, "sys/devices/cpu_atom/cpus"));
  ASSIGN_OR_RETURN(const auto core, ReadOptionalList(fs, "sys/devices/cpu_core/cpus"));
  if (!atom.first && !core.first) {
    ClassifyByCapacity(ids, topo, type_of);
    return Status::Ok();
  }
  // A hybrid machine: E-cores are exactly cpu_atom's CPUs; every other CPU is a P-core (the
  // PMU lists only online CPUs, so cpu_core alone may miss none that matter).
  for (const int cpu : topo.online) {
    type_of[cpu] = static_cast<int>(atom.second.Contains(cpu) ? CoreType::kEfficiency
                                                              : CoreType::kPerformance);
  }
  const CpuSet unlisted = topo.online - atom.second - core.second;
  if (atom.first && core.first && !unlisted.Empty()) {
    topo.warnings.push_back("online CPUs in neither cpu_core nor cpu_atom (taken as p-core): " +
                            unlisted.ToListString());
  }
  return Status::Ok();
}

}  // namespace

Result<CpuTopology> DiscoverTopology(const FileSystem& fs, const DiscoveryOptions& options) {
  CpuTopology topo;
  RETURN_IF_ERROR(DiscoverCpuSets(fs, topo));

  std::vector<CpuIds> ids(CpuSet::kMaxCpus);
  PerCpu core_of(CpuSet::kMaxCpus, -1);
  RETURN_IF_ERROR(DiscoverCpusAndCores(fs, topo, ids, core_of));

  PerCpu type_of(CpuSet::kMaxCpus, static_cast<int>(CoreType::kStandard));
  RETURN_IF_ERROR(DiscoverCoreTypes(fs, ids, topo, type_of));
  for (Core& core : topo.cores) core.type = static_cast<CoreType>(type_of[core.id]);

  PerCpu numa_of(CpuSet::kMaxCpus, -1);
  RETURN_IF_ERROR(topology_internal::DiscoverNumaNodes(fs, topo, numa_of));
  PerCpu l2_of(CpuSet::kMaxCpus, -1);
  PerCpu l3_of(CpuSet::kMaxCpus, -1);
  RETURN_IF_ERROR(topology_internal::DiscoverCaches(fs, topo, l2_of, l3_of));
  if (options.pcie_roots) RETURN_IF_ERROR(topology_internal::DiscoverPcieRoots(fs, topo));

  std::set<int> widths;
  for (const Core& core : topo.cores) widths.insert(core.cpus.Count());
  topo.threads_per_core.assign(widths.begin(), widths.end());

  // smt/control says what the kernel allows ("on", "off", "forceoff", "notsupported",
  // "notimplemented"); without it (old kernels) SMT is on when some core has two threads.
  Result<std::string> control = ReadSysfsWord(fs, std::string(kCpuDir) + "/smt/control");
  if (control.ok()) {
    topo.smt_control = *control;
    topo.smt_enabled = *control == "on";
  } else if (control.status().code() == StatusCode::kNotFound) {
    topo.smt_enabled = topo.MaxThreadsPerCore() > 1;
  } else {
    return control.status();
  }

  for (const int cpu : topo.online) {
    CpuInfo info;
    info.id = cpu;
    info.package = ids[cpu].package;
    info.die = ids[cpu].has_die ? ids[cpu].die : -1;
    info.cluster = ids[cpu].cluster;
    info.numa_node = numa_of[cpu];
    info.core = core_of[cpu];
    info.l2 = l2_of[cpu];
    info.l3 = l3_of[cpu];
    info.type = static_cast<CoreType>(type_of[info.core]);
    info.capacity = ids[cpu].capacity;
    topo.cpus.push_back(info);
  }
  Status valid = topo.Validate();
  if (!valid.ok()) return valid.WithContext("topology discovered from " + fs.HostPath("sys"));
  return topo;
}

}  // namespace dracpu
