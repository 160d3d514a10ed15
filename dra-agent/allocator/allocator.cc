#include "dra-agent/allocator/allocator.h"

#include <algorithm>
#include <string>
#include <utility>

#include "dra-agent/allocator/numa_distribution.h"
#include "dra-agent/allocator/placement_search.h"

namespace dracpu::allocator {
namespace {

// The placement of `count` CPUs among `candidates`, by the distributed or the packed policy.
Result<CpuSet> Place(const TopologyIndex& index, const PlacementPolicy& options,
                     const CpuSet& candidates, int count) {
  const PlacementSearch search(index, options, candidates);
  if (options.distribute_cpus_across_numa) {
    Result<CpuSet> distributed = PlaceDistributed(index, options, search, count);
    // As kubelet: when no even split fits, fall back to packed placement.
    if (distributed.ok() || distributed.status().code() != StatusCode::kNotFound) {
      return distributed;
    }
  }
  return search.Place(count);
}

// The online CPUs of `index` whose core is of `type`.
CpuSet CpusOfType(const TopologyIndex& index, CoreType type) {
  CpuSet out;
  for (const TopologyIndex::CoreEntry& core : index.cores()) {
    if (core.type != type) continue;
    for (int t = 0; t < core.width; ++t) out.Set(index.threads()[core.first + t]);
  }
  return out;
}

Result<CpuSet> AllocateAnyType(const TopologyIndex& index, const AllocationRequest& request,
                               const PlacementPolicy& options);

}  // namespace

// On a hybrid part a claim's CPUs are of one core type unless the policy says coreType any:
// the preferred type when it holds the request, else the other type alone; a request that
// neither holds is refused rather than mixed (a P-core and an E-core thread in one claim run at
// different speeds, which latency-sensitive work does not expect).
Result<CpuSet> Allocate(const TopologyIndex& index, const AllocationRequest& request,
                        const PlacementPolicy& options) {
  if (!index.hybrid() || options.core_type == CoreTypePreference::kAny || request.count <= 0) {
    return AllocateAnyType(index, request, options);
  }
  const bool efficiency = options.core_type == CoreTypePreference::kEfficiency;
  const CoreType order[2] = {efficiency ? CoreType::kEfficiency : CoreType::kPerformance,
                             efficiency ? CoreType::kPerformance : CoreType::kEfficiency};
  std::string why;
  for (const CoreType type : order) {
    AllocationRequest one = request;
    one.available = request.available & CpusOfType(index, type);
    Result<CpuSet> placed = AllocateAnyType(index, one, options);
    if (placed.ok() || placed.status().code() == StatusCode::kInvalidArgument) return placed;
    why += std::string(why.empty() ? "" : "; ") + CoreTypeName(type) + ": " +
           placed.status().message();
  }
  return ResourceExhaustedError("no single core type can hold " + std::to_string(request.count) +
                                " CPUs (" + why +
                                "); a claim gets CPUs of one core type unless its policy sets "
                                "coreType: any");
}

namespace {

Result<CpuSet> AllocateAnyType(const TopologyIndex& index, const AllocationRequest& request,
                               const PlacementPolicy& options) {
  if (request.count < 0) {
    return InvalidArgumentError("request of " + std::to_string(request.count) + " CPUs");
  }
  if (!request.available.IsSubsetOf(index.online())) {
    return InvalidArgumentError("available CPUs not in the topology: " +
                                (request.available - index.online()).ToListString());
  }
  if (!request.reserved.IsSubsetOf(index.online())) {
    return InvalidArgumentError("reserved CPUs not in the topology: " +
                                (request.reserved - index.online()).ToListString());
  }
  // strict-cpu-reservation only changes the shared pool; exclusive CPUs never include reserved
  // ones either way.
  const CpuSet candidates = request.available - request.reserved;
  const int count = request.count;
  if (count > candidates.Count()) {
    return ResourceExhaustedError(
        "not enough cpus available to satisfy request: requested=" + std::to_string(count) +
        ", available=" + std::to_string(candidates.Count()));
  }
  if (count == 0) return CpuSet();
  if (options.full_pcpus_only) {
    // kubelet's admission check, with the real core size (on hybrid parts there is no single
    // size; whether whole cores can make the count is then decided by the search).
    const int width = index.uniform_width();
    if (width > 1 && count % width != 0) {
      return FailedPreconditionError("SMTAlignmentError{RequestedCPUs: " + std::to_string(count) +
                                     ", CpusPerCore: " + std::to_string(width) +
                                     "}: full-pcpus-only needs a multiple of the core size");
    }
  }

  if (!request.numa_affinity.empty()) {
    // The hint is a preference: inside the hinted nodes (widened to their sockets with
    // align-by-socket) when they hold the request, else all of them plus the rest elsewhere, as
    // kubelet's allocateCPUs does.
    CpuSet aligned;
    for (int id : request.numa_affinity) {
      const int numa = index.NumaIndex(id);
      if (numa < 0) {
        return InvalidArgumentError("numaAffinity names NUMA node " + std::to_string(id) +
                                    ", which has no CPUs in the topology");
      }
      if (options.align_by_socket) {
        for (int s = 0; s < index.socket_count(); ++s) {
          if (index.socket_cpus(s).Intersects(index.numa_cpus(numa))) {
            aligned |= index.socket_cpus(s);
          }
        }
      } else {
        aligned |= index.numa_cpus(numa);
      }
    }
    aligned &= candidates;
    Result<CpuSet> inside = Place(index, options, aligned, count);
    if (inside.ok()) return inside;
    const PlacementSearch aligned_search(index, options, aligned);
    const int first = aligned_search.total_capacity();
    ASSIGN_OR_RETURN(CpuSet head, aligned_search.Place(first));
    ASSIGN_OR_RETURN(CpuSet tail, Place(index, options, candidates - aligned, count - first));
    return head | tail;
  }
  if (options.align_by_socket) {
    // Without a hint, align-by-socket keeps a request that no single NUMA node holds inside one
    // socket when one holds it (the tightest such socket), before spanning fewer NUMA nodes
    // across sockets: kubelet's socket-boundary alignment, for the group the scheduler chose.
    const PlacementSearch all(index, options, candidates);
    bool one_node = false;
    for (int n = 0; n < index.numa_count(); ++n) one_node |= all.numa_capacity(n) >= count;
    int best = -1;
    int best_capacity = 0;
    for (int s = 0; s < index.socket_count() && !one_node; ++s) {
      const int capacity =
          PlacementSearch(index, options, candidates & index.socket_cpus(s)).total_capacity();
      if (capacity >= count && (best < 0 || capacity < best_capacity)) {
        best = s;
        best_capacity = capacity;
      }
    }
    if (best >= 0) {
      Result<CpuSet> in_socket = Place(index, options, candidates & index.socket_cpus(best), count);
      if (in_socket.ok()) return in_socket;
    }
  }
  return Place(index, options, candidates, count);
}

}  // namespace
}  // namespace dracpu::allocator
