// The topology-aware CPU allocator: which exact CPUs a claim gets.
//
// Pure domain code (no I/O, no gRPC, built with -fno-exceptions). Given the topology index, the
// candidate CPUs (the free CPUs of the group the scheduler chose), a count and the options, it
// returns the CPUs or a Status that says why not. Quality order, after the hard constraints
// (subset of the candidates, exact count, no reserved CPU, whole cores under full-pcpus-only):
// NUMA nodes spanned, sockets spanned, L3 groups spanned, partially used cores, core-type mix,
// then damage to what stays free. See placement_search.h and docs/allocator.md. With
// align-by-socket and no hint, a request that no single NUMA node holds stays inside one socket
// when one holds it, before the NUMA count is minimised across sockets. On a hybrid part (P/E
// cores, Intel or Arm) a claim gets CPUs of one core type: the preferred one (coreType, default
// performance) when it holds the request, else the other alone; only coreType any mixes them.
//
// Errors:
//  * INVALID_ARGUMENT: negative count, candidate or reserved CPUs not in the topology, a NUMA
//    hint naming an unknown node.
//  * FAILED_PRECONDITION: full-pcpus-only and a count that is not a multiple of the core size
//    (message starts with kubelet's "SMTAlignmentError{RequestedCPUs: N, CpusPerCore: W}").
//  * RESOURCE_EXHAUSTED: "not enough cpus available to satisfy request: requested=N,
//    available=M" (kubelet's words), not enough whole free cores under full-pcpus-only, or
//    "no single core type can hold N CPUs (...)" on a hybrid part without coreType any.
// Deterministic: the same input gives the same answer. Thread safety: a pure function.
#pragma once

#include <vector>

#include "common/cpu_set.h"
#include "common/status.h"
#include "dra-agent/allocator/allocator_options.h"
#include "dra-agent/allocator/topology_index.h"

namespace dracpu::allocator {

struct AllocationRequest {
  CpuSet available;  // candidate CPUs
  int count = 0;
  CpuSet reserved;                 // never chosen, even when listed in `available`
  std::vector<int> numa_affinity;  // kernel NUMA ids of a topology-manager hint; empty = none
};

Result<CpuSet> Allocate(const TopologyIndex& index, const AllocationRequest& request,
                        const PlacementPolicy& options);

}  // namespace dracpu::allocator
