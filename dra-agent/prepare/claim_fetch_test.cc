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
  const ClaimFetcher fetch = [&](const std::string&,
                                 const std::string& name) -> Result<std::string> {
    in_flight.Enter(/*wait_for=*/4);
    in_flight.Leave();
    return name;
  };
  const std::vector<Result<std::string>> got = FetchClaims(fetch, Refs(4), 4);
  ASSERT_EQ(got.size(), 4u);
  for (const auto& r : got) EXPECT_THAT(r, IsOk());
  EXPECT_EQ(in_flight.peak(), 4);
  EXPECT_EQ(in_flight.threads().size(), 4u);
}

TEST(FetchClaims, NeverMoreThanMaxInFlight) {
  InFlight in_flight;
  const ClaimFetcher fetch = [&](const std::string&,
                                 const std::string& name) -> Result<std::string> {
    in_flight.Enter();
    std::this_thread::sleep_for(2ms);
    in_flight.Leave();
    return name;
  };
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
  const ClaimFetcher fetch = [&](const std::string&,
                                 const std::string& name) -> Result<std::string> {
    in_flight.Enter();
    in_flight.Leave();
    return name;
  };
  ASSERT_EQ(FetchClaims(fetch, Refs(1), 4).size(), 1u);
  EXPECT_THAT(in_flight.threads(), ::testing::ElementsAre(std::this_thread::get_id()));
  EXPECT_TRUE(FetchClaims(fetch, {}, 4).empty());
  EXPECT_EQ(FetchClaims(fetch, Refs(3), 0).size(), 3u);  // 0 is taken as 1: the caller alone
  EXPECT_EQ(in_flight.threads().size(), 1u);
}

}  // namespace
}  // namespace dracpu::dra
