#include "dra-agent/prepare/claim_fetch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace dracpu::dra {
namespace {

using namespace std::chrono_literals;

std::vector<ClaimRef> Refs(int n) {
  std::vector<ClaimRef> refs;
  refs.reserve(n);
  for (int i = 0; i < n; ++i)
    refs.push_back({"ns", "c" + std::to_string(i), "u" + std::to_string(i)});
  return refs;
}

// Counts the fetches in flight; `Enter` can wait until `n` have been at once (the 30 s only ends
// a hang).
class InFlight {
 public:
  void Enter(int wait_for = 0) {
    std::unique_lock lock(mu_);
    ++now_;
    peak_ = std::max(peak_, now_);
    threads_.insert(std::this_thread::get_id());
    cv_.notify_all();
    if (wait_for > 0) cv_.wait_for(lock, 30s, [&] { return peak_ >= wait_for; });
  }
  void Leave() {
    std::lock_guard lock(mu_);
    --now_;
  }
  int peak() {
    std::lock_guard lock(mu_);
    return peak_;
  }
  std::set<std::thread::id> threads() {
    std::lock_guard lock(mu_);
    return threads_;
  }
  // A fetcher that counts itself here, holds its GET for `hold` and answers the claim's name.
  ClaimFetcher Fetcher(int wait_for = 0, std::chrono::milliseconds hold = 0ms) {
    return
        [this, wait_for, hold](const std::string&, const std::string& name) -> Result<std::string> {
          Enter(wait_for);
          if (hold > 0ms) std::this_thread::sleep_for(hold);
          Leave();
          return name;
        };
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int now_ = 0, peak_ = 0;
  std::set<std::thread::id> threads_;
};

TEST(FetchClaims, ResultsAndErrorsComeBackInTheRefsOrder) {
  const ClaimFetcher fetch = [](const std::string& ns,
                                const std::string& name) -> Result<std::string> {
    if (name == "c3" || name == "c6")
      return NotFoundError("resourceclaims \"" + name + "\" not found");
    return ns + "/" + name;
  };
  const std::vector<Result<std::string>> got = FetchClaims(fetch, Refs(8), 4);
  ASSERT_EQ(got.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const std::string name = "c" + std::to_string(i);
    if (i == 3 || i == 6) {
      EXPECT_THAT(got[i], StatusIs(StatusCode::kNotFound, ::testing::HasSubstr(name))) << i;
    } else {
      ASSERT_THAT(got[i], IsOk()) << i;
      EXPECT_EQ(*got[i], "ns/" + name);
    }
  }
}

// Four claims, four at a time: every GET waits until all four are in flight, which only happens
// if they overlap.
TEST(FetchClaims, TheGetsOfOneCallOverlap) {
  InFlight in_flight;
  const ClaimFetcher fetch = in_flight.Fetcher(4);
  const std::vector<Result<std::string>> got = FetchClaims(fetch, Refs(4), 4);
  ASSERT_EQ(got.size(), 4u);
  for (const auto& r : got) EXPECT_THAT(r, IsOk());
  EXPECT_EQ(in_flight.peak(), 4);
  EXPECT_EQ(in_flight.threads().size(), 4u);
}

TEST(FetchClaims, NeverMoreThanMaxInFlight) {
  InFlight in_flight;
  const ClaimFetcher fetch = in_flight.Fetcher(0, 2ms);
  const std::vector<Result<std::string>> got = FetchClaims(fetch, Refs(13), 3);
  ASSERT_EQ(got.size(), 13u);
  for (int i = 0; i < 13; ++i) {
    ASSERT_THAT(got[i], IsOk());
    EXPECT_EQ(*got[i], "c" + std::to_string(i));
  }
  EXPECT_LE(in_flight.peak(), 3);
  EXPECT_LE(in_flight.threads().size(), 3u);
}

TEST(FetchClaims, OneClaimIsFetchedOnTheCallingThread) {
  InFlight in_flight;
  const ClaimFetcher fetch = in_flight.Fetcher();
  ASSERT_EQ(FetchClaims(fetch, Refs(1), 4).size(), 1u);
  EXPECT_THAT(in_flight.threads(), ::testing::ElementsAre(std::this_thread::get_id()));
  EXPECT_TRUE(FetchClaims(fetch, {}, 4).empty());
  EXPECT_EQ(FetchClaims(fetch, Refs(3), 0).size(), 3u);  // 0 is taken as 1: the caller alone
  EXPECT_EQ(in_flight.threads().size(), 1u);
}

// The first claim is handed over while the last GET is still in flight: claim 3's GET waits
// until claim 0 was used, which only happens if results stream out in order as they come.
TEST(FetchClaimsInOrder, HandsEachClaimOverAsSoonAsItAndThoseBeforeItAreFetched) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<size_t> used;
  bool waited_for_first = false;
  const ClaimFetcher fetch = [&](const std::string&,
                                 const std::string& name) -> Result<std::string> {
    if (name == "c3") {
      std::unique_lock lock(mu);
      waited_for_first = cv.wait_for(lock, 30s, [&] { return !used.empty(); });
    }
    return name;
  };
  LingeringThreads helpers(4, 30s);
  const std::thread::id caller = std::this_thread::get_id();
  FetchClaimsInOrder(fetch, Refs(4), helpers, 4, [&](size_t i, Result<std::string> got) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(*got, "c" + std::to_string(i));
    std::lock_guard lock(mu);
    used.push_back(i);
    cv.notify_all();
  });
  EXPECT_TRUE(waited_for_first);
  EXPECT_THAT(used, ::testing::ElementsAre(0, 1, 2, 3));
}

// Calls one after another reuse the same helper threads; with none to be had, the caller makes
// the GETs itself.
TEST(FetchClaimsInOrder, ReusesItsHelpersAndFallsBackToTheCaller) {
  InFlight in_flight;
  const ClaimFetcher fetch = in_flight.Fetcher();
  LingeringThreads helpers(2, 30s);
  for (int call = 0; call < 5; ++call) {
    size_t n = 0;
    FetchClaimsInOrder(fetch, Refs(6), helpers, 2, [&](size_t, const Result<std::string>& got) {
      EXPECT_THAT(got, IsOk());
      ++n;
    });
    EXPECT_EQ(n, 6u);
  }
  EXPECT_LE(in_flight.threads().size(), 2u);
  EXPECT_EQ(in_flight.threads().count(std::this_thread::get_id()), 0u);

  LingeringThreads none(0, 30s);
  std::vector<std::string> got;
  FetchClaimsInOrder(fetch, Refs(3), none, 4,
                     [&](size_t, Result<std::string> r) { got.push_back(*r); });
  EXPECT_THAT(got, ::testing::ElementsAre("c0", "c1", "c2"));
  EXPECT_EQ(in_flight.threads().count(std::this_thread::get_id()), 1u);
}

}  // namespace
}  // namespace dracpu::dra
