#include "dra-agent/prepare/claim_fetch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace dracpu::dra {
namespace {

// One call's GETs, shared with its helpers: a helper whose job starts after the caller has
// returned (queued behind another call's GETs) finds every ref taken and touches nothing else.
struct Fetching {
  Fetching(const ClaimFetcher& f, std::vector<ClaimRef> r)
      : fetch(&f), refs(std::move(r)), fetched(refs.size()) {}
  const ClaimFetcher* fetch;  // only called for a ref not yet taken, so while the caller waits
  const std::vector<ClaimRef> refs;
  std::atomic<size_t> next{0};
  std::mutex mu;  // guards `fetched`
  std::condition_variable one_fetched;
  std::vector<std::optional<Result<std::string>>> fetched;
};

// Takes the next ref no one has taken until none is left, so a slow GET holds up no other.
void FetchUntilNoneLeft(Fetching& f) {
  for (size_t i = f.next++; i < f.refs.size(); i = f.next++) {
    Result<std::string> got = (*f.fetch)(f.refs[i].namespace_name, f.refs[i].name);
    std::lock_guard lock(f.mu);
    f.fetched[i].emplace(std::move(got));
    f.one_fetched.notify_one();  // only the calling thread waits
  }
}

}  // namespace

void FetchClaimsInOrder(const ClaimFetcher& fetch, const std::vector<ClaimRef>& refs,
                        LingeringThreads& helpers, size_t max_helpers,
                        const std::function<void(size_t, Result<std::string>)>& use) {
  // A call of one claim (the usual Prepare) shares nothing with helpers: no state is made for it.
  if (refs.size() > 1 && max_helpers > 1) {
    const size_t wanted = std::min(max_helpers, refs.size());
    auto f = std::make_shared<Fetching>(fetch, refs);
    size_t started = 0;
    while (started < wanted && helpers.Run([f] { FetchUntilNoneLeft(*f); })) ++started;
    if (started > 0) {
      std::unique_lock lock(f->mu);
      for (size_t i = 0; i < refs.size(); ++i) {
        f->one_fetched.wait(lock, [&] { return f->fetched[i].has_value(); });
        Result<std::string> got = *std::move(f->fetched[i]);
        lock.unlock();
        use(i, std::move(got));
        lock.lock();
      }
      return;
    }
  }
  // The caller alone, one GET after the other.
  for (size_t i = 0; i < refs.size(); ++i) use(i, fetch(refs[i].namespace_name, refs[i].name));
}

std::vector<Result<std::string>> FetchClaims(const ClaimFetcher& fetch,
                                             const std::vector<ClaimRef>& refs,
                                             size_t max_in_flight) {
  std::vector<Result<std::string>> out;
  out.reserve(refs.size());
  LingeringThreads helpers(max_in_flight, std::chrono::milliseconds(0));
  FetchClaimsInOrder(fetch, refs, helpers, max_in_flight,
                     [&](size_t, Result<std::string> got) { out.push_back(std::move(got)); });
  return out;
}

}  // namespace dracpu::dra
