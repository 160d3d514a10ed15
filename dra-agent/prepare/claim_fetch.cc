#include "dra-agent/prepare/claim_fetch.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

namespace dracpu::dra {
namespace {

struct Fetching {
  const ClaimFetcher* fetch;
  const std::vector<ClaimRef>* refs;
  std::vector<std::optional<Result<std::string>>>* fetched;
  std::atomic<size_t> next{0};
};

// Takes the next ref no one has taken until none is left, so a slow GET holds up no other, and
// a helper thread that could not be made leaves its refs to the others.
void* FetchUntilNoneLeft(void* arg) {
  Fetching& f = *static_cast<Fetching*>(arg);
  for (size_t i = f.next++; i < f.refs->size(); i = f.next++) {
    const ClaimRef& ref = (*f.refs)[i];
    (*f.fetched)[i].emplace((*f.fetch)(ref.namespace_name, ref.name));
  }
  return nullptr;
}

}  // namespace

std::vector<Result<std::string>> FetchClaims(const ClaimFetcher& fetch,
                                             const std::vector<ClaimRef>& refs,
                                             size_t max_in_flight) {
  std::vector<std::optional<Result<std::string>>> fetched(refs.size());
  Fetching f{&fetch, &refs, &fetched};
  // The calling thread is one of the fetchers.
  const size_t fetchers =
      std::min(std::max<size_t>(max_in_flight, 1), std::max<size_t>(refs.size(), 1));
  std::vector<pthread_t> threads;
  threads.reserve(fetchers - 1);
  for (size_t k = 1; k < fetchers; ++k) {
    pthread_t t;
    if (::pthread_create(&t, nullptr, FetchUntilNoneLeft, &f) == 0) threads.push_back(t);
  }
  FetchUntilNoneLeft(&f);
  for (pthread_t t : threads) ::pthread_join(t, nullptr);

  std::vector<Result<std::string>> out;
  out.reserve(refs.size());
  for (std::optional<Result<std::string>>& r : fetched) out.push_back(std::move(*r));
  return out;
}

}  // namespace dracpu::dra
