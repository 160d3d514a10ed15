#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "dra-agent/devices/topology_watcher.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::dra {
namespace {

using ::dracpu::testing::FakeClock;

using dracpu::testing::SysfsFixture;

// Four CPUs, one package, one node; `online` as given.
std::unique_ptr<SysfsFixture> Machine(const std::string& online) {
  auto f = SysfsFixture::Create();
  EXPECT_THAT(f, IsOk());
  (*f)->CpuFile("online", online + "\n").CpuFile("possible", "0-3\n").CpuFile("present", "0-3\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    SysfsFixture::CpuSpec spec;
    spec.core_id = cpu;
    spec.siblings = std::to_string(cpu);
    spec.node = 0;
    (*f)->Cpu(cpu, spec);
  }
  (*f)->Node(0, "0-3");
  EXPECT_THAT((*f)->status(), IsOk());
  return *std::move(f);
}

class TopologyWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fixture_ = Machine("0-3");
    auto fs = fixture_->Fs();
    ASSERT_THAT(fs, IsOk());
    fs_ = *std::move(fs);
    auto t = DiscoverTopology(*fs_);
    ASSERT_THAT(t, IsOk());
    initial_ = *std::move(t);
  }
  // Takes CPU 3 offline the way sysfs shows it: out of cpu/online and out of the node's list.
  void Offline3() {
    fixture_->CpuFile("online", "0-2\n").Node(0, "0-2");
    ASSERT_THAT(fixture_->status(), IsOk());
  }

  std::unique_ptr<SysfsFixture> fixture_;
  std::unique_ptr<FileSystem> fs_;
  CpuTopology initial_;
  testing::FakeClock clock_;
  std::vector<std::string> seen_;
};

TEST_F(TopologyWatcherTest, NothingChangedIsOneSmallRead) {
  TopologyWatcher w(*fs_, clock_, initial_,
                    [&](const CpuTopology& t) { seen_.push_back(t.online.ToListString()); });
  // The watcher took the file's text when it was made (it names the initial online set), so not
  // even the first poll discovers.
  EXPECT_THAT(w.Poll(), IsOkAndHolds(false));
  EXPECT_THAT(w.Poll(), IsOkAndHolds(false));
  EXPECT_THAT(w.Poll(), IsOkAndHolds(false));
  EXPECT_EQ(w.stats().polls, 3u);
  EXPECT_EQ(w.stats().discoveries, 0u);
  EXPECT_TRUE(seen_.empty());
}

TEST_F(TopologyWatcherTest, AFileThatDoesNotParseAtTheStartLeavesTheFirstPollToDiscover) {
  fixture_->CpuFile("online", "garbage\n");
  TopologyWatcher w(*fs_, clock_, initial_,
                    [&](const CpuTopology& t) { seen_.push_back(t.online.ToListString()); });
  fixture_->CpuFile("online", "0-3\n");
  EXPECT_THAT(w.Poll(), IsOkAndHolds(false));
  EXPECT_EQ(w.stats().discoveries, 1u);
  EXPECT_THAT(w.Poll(), IsOkAndHolds(false));
  EXPECT_EQ(w.stats().discoveries, 1u);
  EXPECT_TRUE(seen_.empty());
}

TEST_F(TopologyWatcherTest, OfflineAndOnlineCpusCallBack) {
  TopologyWatcher w(*fs_, clock_, initial_,
                    [&](const CpuTopology& t) { seen_.push_back(t.online.ToListString()); });
  EXPECT_THAT(w.Poll(), IsOkAndHolds(false));
  Offline3();
  EXPECT_THAT(w.Poll(), IsOkAndHolds(true));
  EXPECT_THAT(w.Poll(), IsOkAndHolds(false));
  fixture_->CpuFile("online", "0-3\n").Node(0, "0-3");
  EXPECT_THAT(w.Poll(), IsOkAndHolds(true));
  EXPECT_THAT(seen_, ::testing::ElementsAre("0-2", "0-3"));
  EXPECT_EQ(w.stats().changes, 2u);
}

TEST_F(TopologyWatcherTest, ChangeSinceTheInitialTopologyIsReportedOnTheFirstPoll) {
  Offline3();
  TopologyWatcher w(*fs_, clock_, initial_,
                    [&](const CpuTopology& t) { seen_.push_back(t.online.ToListString()); });
  EXPECT_THAT(w.Poll(), IsOkAndHolds(true));
  EXPECT_THAT(seen_, ::testing::ElementsAre("0-2"));
  EXPECT_EQ(w.stats().discoveries, 1u);
}

TEST_F(TopologyWatcherTest, ErrorsAreCountedAndTheNextPollRecovers) {
  TopologyWatcher w(*fs_, clock_, initial_,
                    [&](const CpuTopology& t) { seen_.push_back(t.online.ToListString()); });
  fixture_->CpuFile("online", "garbage\n");
  EXPECT_THAT(w.Poll(), ::testing::Not(IsOk()));
  EXPECT_EQ(w.stats().errors, 1u);
  EXPECT_FALSE(w.stats().last_error.empty());
  Offline3();
  EXPECT_THAT(w.Poll(), IsOkAndHolds(true));
  EXPECT_TRUE(w.stats().last_error.empty());
}

TEST_F(TopologyWatcherTest, RunPollsEveryIntervalUntilStopped) {
  std::stop_source stop;
  std::atomic<int> changes{0};
  TopologyWatcherOptions o;
  o.interval = std::chrono::milliseconds(10000);
  testing::FakeClock clock(std::chrono::milliseconds(1));
  TopologyWatcher w(
      *fs_, clock, initial_, [&](const CpuTopology&) { ++changes; }, o);
  std::thread t([&] { w.Run(stop.get_token()); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (w.stats().polls < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Offline3();
  while (changes.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop.request_stop();
  t.join();
  EXPECT_EQ(changes.load(), 1);
  // Polls are `interval` apart in (virtual) time, and most are the cheap read only.
  const auto s = w.stats();
  EXPECT_GE(s.polls, 3u);
  EXPECT_LE(s.discoveries, 4u);  // 2, plus one if a poll raced the rewrite
  auto elapsed = clock.Now() - testing::FakeClock().Now();
  EXPECT_GE(elapsed, std::chrono::milliseconds(10000) * (static_cast<int>(s.polls) - 1));
}

}  // namespace
}  // namespace dracpu::dra
