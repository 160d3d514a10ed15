#include "dra-agent/health/device_health_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/shm_test_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class HealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    topology_ = testing::SyntheticTopology({2, 1, 2, 2});  // node 0: 0-1,4-5; node 1: 2-3,6-7
    CatalogOptions o;
    o.min_shared_cpus = 0;
    catalog_ = BuildDeviceCatalog(topology_, o).value();
    std::filesystem::create_directories(dir_.File("sys/devices/system/cpu"));
    SetOnline("0-7");
    fs_ = NewPosixFileSystem(dir_.path()).value();
    segment_ =
        shm::Segment::Open(dir_.File("s.shm"), shm::testing::TestOptions(shm::Role::kDraAgent))
            .value();
    monitor_ = std::make_unique<DeviceHealthMonitor>(
        catalog_, "node-a", *fs_, *segment_, 30s, [this] { return now_; },
        [this] { return node_problem_; });
  }
  void SetOnline(const std::string& list) {
    std::ofstream(dir_.File("sys/devices/system/cpu/online")) << list << "\n";
  }

  shm::testing::TempDir dir_;
  CpuTopology topology_;
  DeviceCatalog catalog_;
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<shm::Segment> segment_;
  std::chrono::nanoseconds now_ = 1000s;
  std::string node_problem_;
  std::unique_ptr<DeviceHealthMonitor> monitor_;
};

TEST_F(HealthTest, HealthyWithinTheGracePeriod) {
  auto h = monitor_->CurrentHealth();
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].state, DeviceHealthState::kHealthy);
  EXPECT_EQ(h[0].device_name, "cpudevnuma000");
  EXPECT_EQ(h[0].pool_name, "node-a");
}

TEST_F(HealthTest, OfflineCpuMakesItsDeviceUnhealthy) {
  SetOnline("0-2,4-7");
  auto h = monitor_->CurrentHealth();
  EXPECT_EQ(h[0].state, DeviceHealthState::kHealthy);
  EXPECT_EQ(h[1].state, DeviceHealthState::kUnhealthy);
  EXPECT_EQ(h[1].message, "CPUs 3 are offline");
}

TEST_F(HealthTest, SilentNriAgentMakesEveryDeviceUnhealthy) {
  now_ += 31s;
  auto h = monitor_->CurrentHealth();
  EXPECT_EQ(h[0].state, DeviceHealthState::kUnhealthy);
  EXPECT_THAT(h[0].message, HasSubstr("has not attached for 31 s"));
}

TEST_F(HealthTest, ANodeProblemMakesEveryDeviceUnhealthyWithItsMessage) {
  node_problem_ = "the kubelet's CPU Manager runs with policy static";
  auto h = monitor_->CurrentHealth();
  ASSERT_EQ(h.size(), 2u);
  for (const DeviceHealthReport& r : h) {
    EXPECT_EQ(r.state, DeviceHealthState::kUnhealthy);
    EXPECT_EQ(r.message, node_problem_);
  }
  node_problem_.clear();
  EXPECT_EQ(monitor_->CurrentHealth()[0].state, DeviceHealthState::kHealthy);
}

}  // namespace
}  // namespace dracpu::dra
