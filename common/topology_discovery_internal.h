// Internal steps of DiscoverTopology (common/topology_discovery.h), one file per concern so each
// stays small. Not a public API: only topology_discovery*.cc include this.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/cpu_set.h"
#include "common/cpu_topology.h"
#include "common/file_system.h"
#include "common/status.h"

namespace dracpu::topology_internal {

inline constexpr char kCpuDir[] = "sys/devices/system/cpu";
inline constexpr char kNodeDir[] = "sys/devices/system/node";

// Per-CPU facts indexed by CPU id (size CpuSet::kMaxCpus), -1 where unknown.
using PerCpu = std::vector<int>;

// "cpu12" with prefix "cpu" -> 12; -1 when the name is not prefix + decimal digits (cpufreq,
// cpuidle, "cpu01", overflow).
int ParseIndexedName(std::string_view name, std::string_view prefix);

// "<kCpuDir>/cpu<N>".
std::string CpuPath(int cpu);

// Ids of the entries "<prefix>N" of `dir` that are directories (or symlinks to directories),
// ascending. NOT_FOUND when `dir` does not exist.
Result<std::vector<int>> ListIndexedDirectories(const FileSystem& fs, const std::string& dir,
                                                std::string_view prefix);

// NUMA nodes: fills topo.numa_nodes (online CPUs only, CPU-less nodes kept) and numa_of[cpu].
// Rules: docs/topology.md "NUMA nodes".
Status DiscoverNumaNodes(const FileSystem& fs, CpuTopology& topo, PerCpu& numa_of);

// L2 and L3 groups: fills topo.l2_caches / l3_caches and l2_of / l3_of. docs/topology.md "Caches".
Status DiscoverCaches(const FileSystem& fs, CpuTopology& topo, PerCpu& l2_of, PerCpu& l3_of);

// PCIe root complexes: fills topo.pcie_roots. docs/topology.md "PCIe roots".
Status DiscoverPcieRoots(const FileSystem& fs, CpuTopology& topo);

}  // namespace dracpu::topology_internal
