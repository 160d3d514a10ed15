// ClaimFetcher and FetchClaims: step 1 of Prepare (the GET of each claim's ResourceClaim) for
// every claim of a call, several at once.
//
// Why: the kubelet sends all of a pod's claims in one NodePrepareResources, and each claim needs
// its ResourceClaim from the API server: one round trip each. One after the other, a call of N
// claims waits N round trips before its first placement (on a cluster, 0.5-2 ms each, more when
// the API server is busy); FetchClaims overlaps them.
//
// Contract: FetchClaimsInOrder hands each result to `use`, on the calling thread, in `refs`
// order, as soon as that claim is fetched (the caller places claim 0 while the GETs of the
// others are still in flight). The GETs run on up to `max_helpers` jobs of `helpers`, whose
// threads are kept between calls (a new thread is dear, see lingering_threads.h); `fetch` must be
// thread-safe, as KubeClient::Get is. A call of one claim, or one that gets no helper, makes its
// GETs on the calling thread, one after the other. It returns once every result was used; a
// helper job that starts later finds nothing to do (`fetch` must outlive `helpers`' threads).
// FetchClaims returns the results, in `refs` order, one per ref, with helper threads of its own
// (at most `max_in_flight` GETs at a time).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/lingering_threads.h"
#include "common/status.h"
#include "dra-agent/prepare/claim_preparer.h"

namespace dracpu::dra {

// Returns the ResourceClaim's JSON from the API server (GET), or the API error.
using ClaimFetcher =
    std::function<Result<std::string>(const std::string& namespace_name, const std::string& name)>;

void FetchClaimsInOrder(const ClaimFetcher& fetch, const std::vector<ClaimRef>& refs,
                        LingeringThreads& helpers, size_t max_helpers,
                        const std::function<void(size_t, Result<std::string>)>& use);
std::vector<Result<std::string>> FetchClaims(const ClaimFetcher& fetch,
                                             const std::vector<ClaimRef>& refs,
                                             size_t max_in_flight);

}  // namespace dracpu::dra
