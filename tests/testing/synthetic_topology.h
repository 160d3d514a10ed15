// Synthetic, symmetric machines for unit tests and benchmarks (real machines come from the
// corpus): sockets x NUMA nodes per socket x cores per NUMA node x SMT threads, with the cores of
// each NUMA node split evenly into `l3_per_numa` L3 groups. CPU numbering is Linux/x86-like: all
// first threads of every core, socket by socket, then all second threads (so CPU c and
// c + cores_total are siblings).
//
// Two forms of the same machine: SyntheticTopology (what discovery would produce) and
// SyntheticRecords (the per-CPU records the allocator's `allocate` input and its tests use).
// Contract: cores_per_numa is a multiple of l3_per_numa; every count is >= 1.
#pragma once

#include <algorithm>
#include <vector>

#include "common/cpu_topology.h"
#include "dra-agent/allocator/topology_builder.h"

namespace dracpu::testing {

struct SyntheticShape {
  int sockets = 1;
  int numa_per_socket = 1;
  int cores_per_numa = 4;
  int threads_per_core = 2;
  int l3_per_numa = 1;
};

inline CpuTopology SyntheticTopology(const SyntheticShape& s) {
  CpuTopology t;
  const int numa_total = s.sockets * s.numa_per_socket;
  const int cores_total = numa_total * s.cores_per_numa;
  const int cores_per_l3 = s.cores_per_numa / s.l3_per_numa;
  for (int p = 0; p < s.sockets; ++p) t.packages.push_back({p, {}});
  for (int n = 0; n < numa_total; ++n) t.numa_nodes.push_back({n, {}, {}});
  for (int l3 = 0; l3 < numa_total * s.l3_per_numa; ++l3) t.l3_caches.push_back({l3, {}});
  for (int core = 0; core < cores_total; ++core) {
    const int numa = core / s.cores_per_numa;
    const int socket = numa / s.numa_per_socket;
    const int l3 = core / cores_per_l3;
    Core c;
    c.id = core;
    c.package = socket;
    for (int th = 0; th < s.threads_per_core; ++th) {
      const int cpu = core + th * cores_total;
      c.cpus.Set(cpu);
      t.online.Set(cpu);
      t.packages[static_cast<size_t>(socket)].cpus.Set(cpu);
      t.numa_nodes[static_cast<size_t>(numa)].cpus.Set(cpu);
      t.l3_caches[static_cast<size_t>(l3)].cpus.Set(cpu);
      CpuInfo info;
      info.id = cpu;
      info.package = socket;
      info.numa_node = numa;
      info.core = core;
      info.l3 = l3;
      t.cpus.push_back(info);
    }
    t.cores.push_back(c);
  }
  std::sort(t.cpus.begin(), t.cpus.end(),
            [](const CpuInfo& a, const CpuInfo& b) { return a.id < b.id; });
  t.present = t.possible = t.online;
  t.smt_enabled = s.threads_per_core > 1;
  t.threads_per_core = {s.threads_per_core};
  return t;
}

inline std::vector<allocator::CpuRecord> SyntheticRecords(const SyntheticShape& s) {
  std::vector<allocator::CpuRecord> records;
  for (const CpuInfo& cpu : SyntheticTopology(s).cpus) {
    records.push_back({cpu.id, cpu.core, cpu.package, cpu.numa_node, cpu.l3, CoreType::kStandard});
  }
  return records;
}

}  // namespace dracpu::testing
