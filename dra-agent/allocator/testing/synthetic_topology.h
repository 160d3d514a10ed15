// Synthetic machines for allocator tests and benchmarks (test-only, header-only): sockets x NUMA
// nodes per socket x L3 groups per NUMA node x cores per L3 x SMT threads, numbered as Linux
// numbers x86 parts (all first threads, then all second threads: siblings far apart).
#pragma once

#include <vector>

#include "dra-agent/allocator/topology_builder.h"

namespace dracpu::allocator::testing {

struct SyntheticShape {
  int sockets = 1;
  int numa_per_socket = 1;
  int l3_per_numa = 1;
  int cores_per_l3 = 1;
  int threads = 1;
};

inline std::vector<CpuRecord> SyntheticRecords(const SyntheticShape& s) {
  const int cores = s.sockets * s.numa_per_socket * s.l3_per_numa * s.cores_per_l3;
  std::vector<CpuRecord> records;
  for (int t = 0; t < s.threads; ++t) {
    for (int core = 0; core < cores; ++core) {
      const int l3 = core / s.cores_per_l3;
      const int numa = l3 / s.l3_per_numa;
      const int socket = numa / s.numa_per_socket;
      records.push_back({t * cores + core, core, socket, numa, l3, CoreType::kStandard});
    }
  }
  return records;
}

}  // namespace dracpu::allocator::testing
