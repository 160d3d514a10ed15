// AllocatorOptions: the placement policy knobs, parsed once from kubelet-style option names.
//
// Names and meanings follow the kubelet CPU Manager static policy (../shared/spec/allocation.md
// §(a) "Policy options"); the algorithm only ever reads the typed fields below.
//   full-pcpus-only                    whole cores only; count must be a multiple of the core size
//   distribute-cpus-across-numa        even split over the fewest NUMA nodes that fit (KEP-2902)
//   align-by-socket                    widen a NUMA hint to whole sockets
//   prefer-align-cpus-by-uncorecache   minimise L3 groups spanned (default on)
//   distribute-cpus-across-cores       one thread per core before using siblings
//   strict-cpu-reservation             accepted; reserved CPUs are never chosen either way
//   core-type                          performance (default) | efficiency | any
// Boolean values use Go's strconv.ParseBool spelling (true/false/1/0/t/f/TRUE/True/...), as
// kubelet does. Incompatible pairs are refused as kubelet refuses them, but only when both were
// given explicitly (the uncore option being on by default must not make the others unusable).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dracpu::allocator {

enum class CoreTypePreference { kPerformance, kEfficiency, kAny };

struct AllocatorOptions {
  bool full_pcpus_only = false;
  bool distribute_cpus_across_numa = false;
  bool align_by_socket = false;
  bool prefer_align_cpus_by_uncorecache = true;
  bool distribute_cpus_across_cores = false;
  bool strict_cpu_reservation = false;
  CoreTypePreference core_type = CoreTypePreference::kPerformance;
  // Group size of distribute-cpus-across-numa (kubelet's cpuGroupSize); 0 derives it as kubelet
  // does: the core size with full-pcpus-only, else 1.
  int numa_distribution_group = 0;
};

// INVALID_ARGUMENT naming the option for unknown names, bad values, duplicates and incompatible
// pairs.
Result<AllocatorOptions> ParseAllocatorOptions(
    const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace dracpu::allocator
