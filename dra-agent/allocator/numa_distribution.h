// distribute-cpus-across-numa (kubelet KEP-2902): an even split over the fewest NUMA nodes that
// can hold the request, each node's share placed with the packed search.
//
// As kubelet: the request is cut in groups of g CPUs (the option's group size: the core size
// with full-pcpus-only, else 1); each of the k chosen nodes gets floor(n/k/g)*g CPUs and the
// remaining groups go one each to the nodes that leave the free CPUs of all nodes most balanced
// (smallest variance). Where kubelet picks the first combination among equals, we prefer the
// combination spanning the fewest sockets, then the balance (allocation.md §(d)6).
// NOT_FOUND when no even split fits (the caller falls back to packed placement, as kubelet).
#pragma once

#include "common/cpu_set.h"
#include "common/status.h"
#include "dra-agent/allocator/allocator_options.h"
#include "dra-agent/allocator/placement_search.h"
#include "dra-agent/allocator/topology_index.h"

namespace dracpu::allocator {

Result<CpuSet> PlaceDistributed(const TopologyIndex& index, const PlacementPolicy& options,
                                const PlacementSearch& search, int count);

}  // namespace dracpu::allocator
