// The allocator's options as kubelet spells them (a CPU Manager policy option list, name=value),
// for the `allocate` command and the allocator's tests. A thin front on common/placement_policy.h:
// the names are the policy keys' kubelet aliases (full-pcpus-only, distribute-cpus-across-numa,
// align-by-socket, prefer-align-cpus-by-uncorecache, distribute-cpus-across-cores, core-type),
// parsed and checked for incompatible pairs by the one PolicyParser. kubelet's
// strict-cpu-reservation is accepted with no effect: reserved CPUs are never chosen either way.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/placement_policy.h"
#include "common/status.h"

namespace dracpu::allocator {

// INVALID_ARGUMENT naming the option for unknown names, bad values, duplicates and incompatible
// pairs.
Result<PlacementPolicy> ParseKubeletOptions(
    const std::vector<std::pair<std::string, std::string>>& options);

}  // namespace dracpu::allocator
