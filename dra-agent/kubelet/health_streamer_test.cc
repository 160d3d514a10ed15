#include "dra-agent/kubelet/health_streamer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/testing/real_clock.h"

namespace dracpu::dra {
namespace {

class SteadyHealth : public DeviceHealthSource {
 public:
  std::vector<DeviceHealthReport> CurrentHealth() override {
    DeviceHealthReport r;
    r.pool_name = "node-1";
    r.device_name = "cpudevnuma000";
    return {r};
  }
  std::optional<std::chrono::milliseconds> StableFor() override { return std::chrono::hours(1); }
};

// A client that went away without the stream noticing (the sync server only tells on a write):
// a fifth stream ends the oldest, so abandoned streams cannot hold every server thread.
TEST(HealthStreamerTest, ANewStreamBeyondTheLimitEndsTheOldest) {
  SteadyHealth health;
  HealthStreamer streamer(health, {std::chrono::hours(1), std::chrono::hours(1), 30},
                          testing::RealClock());
  std::atomic<int> sent{0};
  std::vector<std::atomic<bool>> ended(HealthStreamer::kMaxStreams + 1);
  std::vector<std::thread> streams;
  auto start = [&](size_t i) {
    streams.emplace_back([&, i] {
      streamer.Run([] { return false; },
                   [&](const std::vector<DeviceHealthReport>&) {
                     ++sent;
                     return true;
                   });
      ended[i] = true;
    });
  };
  for (size_t i = 0; i < HealthStreamer::kMaxStreams; ++i) start(i);
  while (sent < static_cast<int>(HealthStreamer::kMaxStreams)) std::this_thread::yield();
  for (size_t i = 0; i < HealthStreamer::kMaxStreams; ++i) EXPECT_FALSE(ended[i]) << i;
  start(HealthStreamer::kMaxStreams);
  // The oldest (the first to register, whichever thread that was) ends; the test would hang
  // here otherwise.
  auto count_ended = [&] {
    int n = 0;
    for (const auto& e : ended) n += e ? 1 : 0;
    return n;
  };
  while (count_ended() == 0) std::this_thread::yield();
  EXPECT_EQ(count_ended(), 1);
  EXPECT_FALSE(ended[HealthStreamer::kMaxStreams]);
  streamer.Stop();
  for (auto& t : streams) t.join();
}

// A stream whose write fails leaves the set, so it does not count toward the limit.
TEST(HealthStreamerTest, ABrokenStreamFreesItsPlace) {
  SteadyHealth health;
  HealthStreamer streamer(health, {std::chrono::hours(1), std::chrono::hours(1), 30},
                          testing::RealClock());
  for (size_t i = 0; i < 2 * HealthStreamer::kMaxStreams; ++i) {
    streamer.Run([] { return false; },
                 [](const std::vector<DeviceHealthReport>&) { return false; });
  }
  std::atomic<bool> sent{false};
  std::atomic<bool> live_ended{false};
  std::thread live([&] {
    streamer.Run([] { return false; },
                 [&](const std::vector<DeviceHealthReport>&) {
                   sent = true;
                   return true;
                 });
    live_ended = true;
  });
  while (!sent) std::this_thread::yield();
  // Three more streams stay within the limit: none of them ends the live one.
  std::vector<std::thread> others;
  std::atomic<int> others_sent{0};
  for (size_t i = 0; i + 1 < HealthStreamer::kMaxStreams; ++i) {
    others.emplace_back([&] {
      streamer.Run([] { return false; },
                   [&](const std::vector<DeviceHealthReport>&) {
                     ++others_sent;
                     return true;
                   });
    });
  }
  while (others_sent < static_cast<int>(HealthStreamer::kMaxStreams) - 1) {
    std::this_thread::yield();
  }
  EXPECT_FALSE(live_ended);
  streamer.Stop();
  live.join();
  for (auto& t : others) t.join();
}

}  // namespace
}  // namespace dracpu::dra
