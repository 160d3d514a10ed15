// CpuTopology: the node's CPUs as the kernel describes them, as plain data.
//
// Produced by topology discovery from a sysfs root (common/topology_discovery.h) or built from
// per-CPU records (the allocator's test input); consumed by the allocator, the ResourceSlice
// publisher, the shared-memory topology summary and `gatherinfo`.
//
// Invariants (established by whoever builds it, checked by Validate()):
//  * Every group (package, die, cluster, NUMA node, L2, L3, core) lists online CPUs only.
//    A NUMA node with no online CPUs is kept with an empty set (CPU-less node).
//  * Cores partition the online CPUs; a core's id is the lowest CPU id among its threads.
//  * Each online CPU appears in `cpus` exactly once, sorted by id. A CPU in no NUMA node, or with
//    no L3/L2 cache, or in no die/cluster, has -1 in that field.
//  * Groups are sorted by id (cores by id, PCIe roots by name).
//  * Offline CPUs are never allocatable: they appear only in `offline` / `present` / `possible`.
// Ids are the kernel's (package 36, node 250 are real), never indices.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/status.h"

namespace dracpu {

enum class CoreType {
  kStandard = 0,     // not a hybrid machine
  kPerformance = 1,  // Intel hybrid P-core ("p-core"), or the highest capacity class on Arm
  kEfficiency = 2,   // Intel hybrid E-core ("e-core"), or a lower capacity class on Arm
};

// "standard" / "p-core" / "e-core" (the gatherinfo and ResourceSlice spelling).
const char* CoreTypeName(CoreType type);

struct CpuGroup {
  int id = -1;
  CpuSet cpus;
};

struct Die {
  int package = -1;
  int id = -1;
  CpuSet cpus;
};

struct Cluster {
  int package = -1;
  int id = -1;
  CpuSet cpus;
};

struct NumaNode {
  int id = -1;
  CpuSet cpus;                   // online CPUs only; empty for a CPU-less (memory-only) node
  std::map<int, int> distances;  // node id -> SLIT distance; empty when the kernel gives none
};

struct Core {
  int id = -1;  // lowest CPU id among the core's threads
  CpuSet cpus;  // the SMT siblings (online only)
  CoreType type = CoreType::kStandard;
  int package = -1;
};

struct PcieRoot {
  std::string name;  // "pci0000:00"
  CpuSet cpus;       // local CPUs from pci_bus/<DDDD:BB>/cpulistaffinity (online only)
};

struct CpuInfo {
  int id = -1;
  int package = -1;
  int die = -1;
  int cluster = -1;
  int numa_node = -1;
  int core = -1;  // Core::id
  int l2 = -1;    // CpuGroup::id in l2_caches
  int l3 = -1;    // CpuGroup::id in l3_caches
  CoreType type = CoreType::kStandard;
  int capacity = -1;  // Arm cpu_capacity (extra detail), -1 when absent
};

struct CpuTopology {
  CpuSet online;
  CpuSet offline;
  CpuSet present;
  CpuSet possible;
  CpuSet isolated;

  bool smt_enabled = false;
  std::string smt_control;            // content of smt/control, "" when absent
  std::vector<int> threads_per_core;  // distinct values, ascending (e.g. {1, 2} on hybrid parts)

  std::vector<CpuGroup> packages;
  std::vector<Die> dies;
  std::vector<Cluster> clusters;
  std::vector<NumaNode> numa_nodes;
  std::vector<CpuGroup> l3_caches;
  std::vector<CpuGroup> l2_caches;
  std::vector<Core> cores;
  std::vector<CpuInfo> cpus;
  std::vector<PcieRoot> pcie_roots;

  // What discovery had to decide on its own (quirks), one sentence each; gatherinfo prints them.
  std::vector<std::string> warnings;

  // The record of an online CPU, nullptr when `cpu` is not online.
  const CpuInfo* FindCpu(int cpu) const;
  // The largest thread count of any core (1 when there are no cores).
  int MaxThreadsPerCore() const;

  // Checks the invariants above; the message names the first broken one.
  Status Validate() const;
};

}  // namespace dracpu
