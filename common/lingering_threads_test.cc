#include "common/lingering_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace dracpu {
namespace {

using namespace std::chrono_literals;

// Waits (up to 30 s, only to end a hang) until `done` holds.
template <typename Pred>
bool WaitUntil(Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A job that runs until released, recording the thread it ran on.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int running = 0;
  std::set<std::thread::id> threads;
  std::function<void()> Job() {
    return [this] {
      std::unique_lock lock(mu);
      ++running;
      threads.insert(std::this_thread::get_id());
      cv.notify_all();
      cv.wait_for(lock, 30s, [&] { return open; });
      --running;
    };
  }
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  bool RunningReaches(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 30s, [&] { return running >= n; });
  }
};

TEST(LingeringThreads, RunsUpToMaxJobsAtOnceThenQueues) {
  LingeringThreads pool(3, 30s);
  Gate gate;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.Run(gate.Job()));
  ASSERT_TRUE(gate.RunningReaches(3));
  EXPECT_EQ(gate.threads.size(), 3u);
  // Every thread busy: the job waits for the first of them to be free.
  std::atomic<bool> queued_ran{false};
  ASSERT_TRUE(pool.Run([&] { queued_ran = true; }));
  EXPECT_EQ(pool.threads(), 3u);
  std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(queued_ran);
  gate.Open();
  EXPECT_TRUE(WaitUntil([&] { return queued_ran.load(); }));
  EXPECT_EQ(pool.threads(), 3u);
}

TEST(LingeringThreads, NoThreadsNoJobs) {
  LingeringThreads pool(0, 30s);
  EXPECT_FALSE(pool.Run([] {}));
}

TEST(LingeringThreads, AThreadThatFinishedTakesTheNextJobInsteadOfANewOne) {
  LingeringThreads pool(4, 30s);
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  std::atomic<int> done{0};
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(pool.Run([&] {
      std::lock_guard lock(mu);
      ran_on.insert(std::this_thread::get_id());
      ++done;
    }));
    ASSERT_TRUE(WaitUntil([&] { return done == round + 1; }));
    // The job's thread is waiting again before the next round posts.
    ASSERT_TRUE(WaitUntil([&] { return pool.idle_threads() == 1; }));
    ASSERT_EQ(pool.threads(), 1u);
  }
  EXPECT_EQ(ran_on.size(), 1u);
}

TEST(LingeringThreads, IdleThreadsEndAfterTheLinger) {
  LingeringThreads pool(2, 20ms);
  std::atomic<int> done{0};
  ASSERT_TRUE(pool.Run([&] { ++done; }));
  ASSERT_TRUE(pool.Run([&] { ++done; }));
  ASSERT_TRUE(WaitUntil([&] { return done == 2; }));
  ASSERT_TRUE(WaitUntil([&] { return pool.threads() == 0; }));
  // And new ones are made for later jobs (the ended ones are joined on the way).
  ASSERT_TRUE(pool.Run([&] { ++done; }));
  ASSERT_TRUE(WaitUntil([&] { return done == 3; }));
}

TEST(LingeringThreads, DestructionWaitsForTheJobsInProgress) {
  Gate gate;  // outlives the pool
  std::atomic<int> finished{0};
  std::thread opener;
  {
    LingeringThreads pool(2, 30s);
    ASSERT_TRUE(pool.Run([&, job = gate.Job()] {
      job();
      ++finished;
    }));
    ASSERT_TRUE(gate.RunningReaches(1));
    opener = std::thread([&] {
      std::this_thread::sleep_for(20ms);
      gate.Open();
    });
  }  // the job still runs here
  EXPECT_EQ(finished, 1);
  opener.join();
}

TEST(LingeringThreads, ManyCallersAtOnceEveryJobRunsOnce) {
  std::atomic<int> ran{0};
  {
    LingeringThreads pool(4, 30s);
    std::vector<std::thread> callers;
    callers.reserve(4);
    for (int c = 0; c < 4; ++c) {
      callers.emplace_back([&] {
        for (int i = 0; i < 200; ++i) EXPECT_TRUE(pool.Run([&] { ++ran; }));
      });
    }
    for (auto& t : callers) t.join();
    EXPECT_LE(pool.threads(), 4u);
  }  // the destructor runs what is still queued
  EXPECT_EQ(ran, 800);
}

}  // namespace
}  // namespace dracpu
