// Synthetic, symmetric CpuTopology values for unit tests (real machines come from the corpus).
// CPU numbering is Linux/x86-like: all first threads of every core, socket by socket, then all
// second threads (so CPU c and c + cores_total are siblings). One L3 per NUMA node.
#pragma once

#include <algorithm>

#include "common/cpu_topology.h"

namespace dracpu::testing {

struct SyntheticShape {
  int sockets = 1;
  int numa_per_socket = 1;
  int cores_per_numa = 4;
  int threads_per_core = 2;
};

inline CpuTopology SyntheticTopology(const SyntheticShape& s) {
  CpuTopology t;
  const int cores_total = s.sockets * s.numa_per_socket * s.cores_per_numa;
  for (int p = 0; p < s.sockets; ++p) t.packages.push_back({p, {}});
  for (int n = 0; n < s.sockets * s.numa_per_socket; ++n) {
    t.numa_nodes.push_back({n, {}, {}});
    t.l3_caches.push_back({n, {}});
  }
  for (int core = 0; core < cores_total; ++core) {
    const int numa = core / s.cores_per_numa;
    const int socket = numa / s.numa_per_socket;
    Core c;
    c.id = core;
    c.package = socket;
    for (int th = 0; th < s.threads_per_core; ++th) {
      const int cpu = core + th * cores_total;
      c.cpus.Set(cpu);
      t.online.Set(cpu);
      t.packages[static_cast<size_t>(socket)].cpus.Set(cpu);
      t.numa_nodes[static_cast<size_t>(numa)].cpus.Set(cpu);
      t.l3_caches[static_cast<size_t>(numa)].cpus.Set(cpu);
      CpuInfo info;
      info.id = cpu;
      info.package = socket;
      info.numa_node = numa;
      info.core = core;
      info.l3 = numa;
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

}  // namespace dracpu::testing
