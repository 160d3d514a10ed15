#include "common/event_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "tests/testing/fake_clock.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::loop {
namespace {

using ::testing::ElementsAre;
using namespace std::chrono_literals;

std::unique_ptr<EventLoop> MakeLoop() {
  auto loop = EventLoop::Create(dracpu::testing::RealClock());
  EXPECT_THAT(loop, IsOk());
  return std::move(loop).value();
}

// Runs iterations until `done` or a bound on iterations (never a bound on time).
template <typename Pred>
void RunUntil(EventLoop& loop, Pred done) {
  for (int i = 0; i < 10000 && !done(); ++i) ASSERT_THAT(loop.RunOnce(100ms), IsOk());
  ASSERT_TRUE(done());
}

// Timers follow the injected clock: an hour-long timer runs as soon as virtual time reaches it,
// and never before, without the loop waiting on real time.
TEST(EventLoop, TimersRunOnTheInjectedClock) {
  dracpu::testing::FakeClock clock;
  auto created = EventLoop::Create(clock);
  ASSERT_THAT(created, IsOk());
  EventLoop& loop = **created;
  std::vector<int> ran;
  loop.AddTimer(1h, [&] { ran.push_back(1); });
  loop.AddTimer(2h, [&] { ran.push_back(2); });
  ASSERT_THAT(loop.RunOnce(0ms), IsOk());
  EXPECT_TRUE(ran.empty());
  clock.Advance(1h);
  ASSERT_THAT(loop.RunOnce(0ms), IsOk());
  EXPECT_THAT(ran, ElementsAre(1));
  clock.Advance(59min);
  ASSERT_THAT(loop.RunOnce(0ms), IsOk());
  EXPECT_THAT(ran, ElementsAre(1));
  clock.Advance(1min);
  ASSERT_THAT(loop.RunOnce(0ms), IsOk());
  EXPECT_THAT(ran, ElementsAre(1, 2));
  EXPECT_EQ(loop.timer_count(), 0u);
}

// On the injected clock: with real time, a pause between two AddTimer calls (TSan on a busy
// machine) could put the 2 ms timer's deadline after the 3 ms one's.
TEST(EventLoop, TimersRunInDeadlineOrderAndCancelledOnesNever) {
  dracpu::testing::FakeClock clock;
  auto created = EventLoop::Create(clock);
  ASSERT_THAT(created, IsOk());
  EventLoop* loop = created->get();
  std::vector<int> order;
  loop->AddTimer(3ms, [&] { order.push_back(3); });
  const auto cancelled = loop->AddTimer(1ms, [&] { order.push_back(99); });
  loop->AddTimer(0ms, [&] { order.push_back(0); });
  loop->AddTimer(2ms, [&] { order.push_back(2); });
  loop->CancelTimer(cancelled);
  clock.Advance(3ms);
  RunUntil(*loop, [&] { return order.size() == 3; });
  EXPECT_THAT(order, ElementsAre(0, 2, 3));
  EXPECT_EQ(loop->timer_count(), 0u);
}

TEST(EventLoop, PostFromAnotherThreadWakesTheLoop) {
  auto loop = MakeLoop();
  bool ran = false;
  std::thread poster([&] { loop->Post([&] { ran = true; }); });
  poster.join();
  // RunOnce with no timeout returns because the eventfd woke it.
  ASSERT_THAT(loop->RunOnce(std::nullopt), IsOk());
  if (!ran) {
    ASSERT_THAT(loop->RunOnce(std::nullopt), IsOk());
  }
  EXPECT_TRUE(ran);
}

TEST(EventLoop, StopFromAnotherThreadEndsRun) {
  auto loop = MakeLoop();
  std::thread stopper([&] { loop->Post([&] { loop->Stop(); }); });
  EXPECT_THAT(loop->Run(), IsOk());
  stopper.join();
}

// A stop seen in an iteration (here a readable stop fd, as main's signalfd) wins over a timer
// that is due in the same iteration: the timer stays queued and runs only if the loop runs again.
TEST(EventLoop, AStopSeenInAnIterationKeepsItsDueTimersQueued) {
  dracpu::testing::FakeClock clock;
  auto created = EventLoop::Create(clock);
  ASSERT_THAT(created, IsOk());
  EventLoop& loop = **created;
  UniqueFd stop(::eventfd(1, EFD_CLOEXEC));
  ASSERT_TRUE(stop.valid());
  ASSERT_THAT(loop.Watch(stop.get(), EPOLLIN, [&](uint32_t) { loop.Stop(); }), IsOk());
  int ran = 0;
  loop.AddTimer(1s, [&] { ++ran; });
  clock.Advance(1s);
  EXPECT_THAT(loop.Run(), IsOk());
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(loop.timer_count(), 1u);
  uint64_t value = 0;
  ASSERT_EQ(::read(stop.get(), &value, sizeof value), 8);
  ASSERT_THAT(loop.RunOnce(0ms), IsOk());
  EXPECT_EQ(ran, 1);
}

TEST(EventLoop, WatchReportsReadableAndUnwatchInsideHandlerStopsIt) {
  auto loop = MakeLoop();
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  int calls = 0;
  EventLoop::WatchId id = 0;
  auto watched = loop->Watch(a.get(), EPOLLIN, [&](uint32_t events) {
    EXPECT_TRUE(events & EPOLLIN);
    ++calls;
    loop->Unwatch(id);  // level-triggered: without this it would fire every iteration
  });
  ASSERT_THAT(watched, IsOk());
  id = *watched;
  ASSERT_EQ(::write(b.get(), "x", 1), 1);
  for (int i = 0; i < 3; ++i) ASSERT_THAT(loop->RunOnce(0ms), IsOk());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(loop->watch_count(), 0u);
}

TEST(EventLoop, ModifyUnknownWatchIsNotFound) {
  auto loop = MakeLoop();
  EXPECT_THAT(loop->Modify(42, EPOLLIN), StatusIs(StatusCode::kNotFound));
}

}  // namespace
}  // namespace dracpu::loop
