// PlacementMetrics: how well a set of CPUs sits on the topology, as cases.json measures it
// (../shared/spec/allocation.md, "How to score placement quality"). Lower is better for all.
#pragma once

#include <tuple>

#include "common/cpu_set.h"
#include "dra-agent/allocator/topology_index.h"

namespace dracpu::allocator {

struct PlacementMetrics {
  int numa_span = 0;      // NUMA nodes touched
  int socket_span = 0;    // sockets touched
  int l3_span = 0;        // (socket, L3) groups touched
  int cores_touched = 0;  // cores with at least one chosen CPU
  int partial_cores = 0;  // touched cores not wholly chosen (shared with another tenant via SMT)

  // The lexicographic quality key of the spec: (numaSpan, socketSpan, l3Span, partialCores).
  auto QualityKey() const {
    return std::make_tuple(numa_span, socket_span, l3_span, partial_cores);
  }
  friend bool operator==(const PlacementMetrics&, const PlacementMetrics&) = default;
};

// CPUs outside the topology are ignored.
PlacementMetrics ComputeMetrics(const TopologyIndex& index, const CpuSet& cpus);

}  // namespace dracpu::allocator
