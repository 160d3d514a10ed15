#include "dra-agent/allocator/placement_metrics.h"

#include <vector>

namespace dracpu::allocator {

PlacementMetrics ComputeMetrics(const TopologyIndex& index, const CpuSet& cpus) {
  std::vector<char> numa(index.numa_count()), socket(index.socket_count()), l3(index.l3_count());
  std::vector<int> taken(index.cores().size());
  PlacementMetrics m;
  for (int cpu : cpus) {
    const int c = index.CoreOf(cpu);
    if (c < 0) continue;
    const TopologyIndex::CoreEntry& core = index.cores()[c];
    m.numa_span += !numa[core.numa];
    m.socket_span += !socket[core.socket];
    m.l3_span += !l3[core.l3];
    numa[core.numa] = socket[core.socket] = l3[core.l3] = 1;
    m.cores_touched += taken[c] == 0;
    ++taken[c];
  }
  for (size_t c = 0; c < taken.size(); ++c) {
    m.partial_cores += taken[c] > 0 && taken[c] < index.cores()[c].width;
  }
  return m;
}

}  // namespace dracpu::allocator
