// ClaimFetcher and FetchClaims: step 1 of Prepare (the GET of each claim's ResourceClaim) for
// every claim of a call, several at once.
//
// Why: the kubelet sends all of a pod's claims in one NodePrepareResources, and each claim needs
// its ResourceClaim from the API server: one round trip each. One after the other, a call of N
// claims waits N round trips before its first placement (on a cluster, 0.5-2 ms each, more when
// the API server is busy); FetchClaims overlaps them.
//
// Contract: results come back in `refs` order, one per ref. `fetch` is called from several
// threads at once (it must be thread-safe, as KubeClient::Get is), at most `max_in_flight` calls
// at a time; the calling thread makes its share, so a call of one claim starts no thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "dra-agent/prepare/claim_preparer.h"

namespace dracpu::dra {

// Returns the ResourceClaim's JSON from the API server (GET), or the API error.
using ClaimFetcher =
    std::function<Result<std::string>(const std::string& namespace_name, const std::string& name)>;

std::vector<Result<std::string>> FetchClaims(const ClaimFetcher& fetch,
                                             const std::vector<ClaimRef>& refs,
                                             size_t max_in_flight);

}  // namespace dracpu::dra
