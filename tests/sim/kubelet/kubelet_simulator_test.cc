#include "tests/sim/kubelet/kubelet_simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>

#include <atomic>
#include <cstdlib>

#include "dra-agent/kubelet/health_streamer.h"
#include "dra-agent/kubelet/kubelet_plugin_server.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::sim {
namespace {

using dra::ClaimPrepareResult;
using dra::ClaimRef;
using dra::DeviceHealthReport;
using dra::DeviceHealthState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A preparer that answers every claim with one device, or an error for uids starting with "bad",
// and forgets uids starting with "skip" (a buggy driver).
class FakePreparer : public dra::ClaimPreparer {
 public:
  std::map<std::string, ClaimPrepareResult> Prepare(const std::vector<ClaimRef>& claims) override {
    ++prepare_calls;
    std::map<std::string, ClaimPrepareResult> out;
    for (const ClaimRef& c : claims) {
      if (c.uid.rfind("skip", 0) == 0) continue;
      if (c.uid.rfind("bad", 0) == 0) {
        out[c.uid].error = "claim " + c.namespace_name + "/" + c.name + ": bad";
        continue;
      }
      out[c.uid].devices.push_back(
          {{"req"}, "node-a", "cpudevnuma000", {"dra.k8s.io/cpu=claim-" + c.uid}, {}});
    }
    return out;
  }
  std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) override {
    std::map<std::string, std::string> out;
    for (const ClaimRef& c : claims) out[c.uid] = "";
    return out;
  }
  std::atomic<int> prepare_calls{0};
};

class FakeHealth : public dra::DeviceHealthSource {
 public:
  std::vector<DeviceHealthReport> CurrentHealth() override {
    std::lock_guard lock(mu);
    return reports;
  }
  std::mutex mu;
  std::vector<DeviceHealthReport> reports = {
      {"node-a", "cpudevnuma000", DeviceHealthState::kHealthy, ""}};
};

class KubeletSimulatorTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> versions = {"v1.DRAPlugin", "v1beta1.DRAPlugin",
                                                  "v1alpha1.DRAResourceHealth"}) {
    dra::KubeletPluginServerOptions options;
    options.paths = dra::MakePluginPaths(tmp_.path()).value();
    options.supported_versions = std::move(versions);
    options.health = &streamer_;
    auto server =
        dra::KubeletPluginServer::Start(options, preparer_, [this](bool ok, const std::string& e) {
          std::lock_guard lock(mu_);
          notified_.push_back({ok, e});
        });
    ASSERT_THAT(server, IsOk());
    server_ = std::move(server).value();
  }
  void TearDown() override {
    streamer_.Stop();
    if (server_) server_->Shutdown();
  }
  std::string Registry() const { return tmp_.File("plugins_registry"); }

  testing::TempDir tmp_{"dracpu-ks"};
  FakePreparer preparer_;
  FakeHealth health_;
  dra::HealthStreamer streamer_{
      health_, {std::chrono::milliseconds(20), std::chrono::seconds(10), 30}, testing::RealClock()};
  std::unique_ptr<dra::KubeletPluginServer> server_;
  std::mutex mu_;
  std::vector<std::pair<bool, std::string>> notified_;
};

TEST_F(KubeletSimulatorTest, RegistersPreparesAndUnpreparesOverV1) {
  Start();
  KubeletSimulator sim(Registry(), {"v1.DRAPlugin", "v1beta1.DRAPlugin"});
  auto reg = sim.Register("dra.cpu", std::chrono::seconds(10));
  ASSERT_THAT(reg, IsOk());
  EXPECT_EQ(reg->chosen, DraApiVersion::kV1);
  EXPECT_TRUE(server_->registered());
  EXPECT_THAT(sim.ProbeRegistration(), IsOk());
  auto prepared = sim.Prepare({{"ns", "c1", "u1"}, {"ns", "c2", "bad2"}});
  ASSERT_THAT(prepared, IsOk());
  ASSERT_EQ(prepared->size(), 2u);
  EXPECT_THAT(prepared->at("u1").devices[0].cdi_device_ids, ElementsAre("dra.k8s.io/cpu=claim-u1"));
  EXPECT_THAT(prepared->at("bad2").error, HasSubstr("ns/c2: bad"));
  auto unprepared = sim.Unprepare({{"ns", "c1", "u1"}});
  ASSERT_THAT(unprepared, IsOk());
  EXPECT_EQ(unprepared->at("u1"), "");
}

TEST_F(KubeletSimulatorTest, OldKubeletUsesV1beta1) {
  Start();
  KubeletSimulator sim(Registry(), {"v1beta1.DRAPlugin"});
  auto reg = sim.Register("dra.cpu", std::chrono::seconds(10));
  ASSERT_THAT(reg, IsOk());
  EXPECT_EQ(reg->chosen, DraApiVersion::kV1beta1);
  ASSERT_THAT(sim.Prepare({{"ns", "c1", "u1"}}), IsOk());
  EXPECT_EQ(preparer_.prepare_calls.load(), 1);
}

TEST_F(KubeletSimulatorTest, KubeletRefusesUnknownVersionsAndTellsTheDriver) {
  Start({"v9.DRAPlugin"});
  KubeletSimulator sim(Registry(), {"v1.DRAPlugin"});
  EXPECT_THAT(sim.Register("dra.cpu", std::chrono::seconds(10)),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("none of the plugin's versions")));
  std::lock_guard lock(mu_);
  ASSERT_EQ(notified_.size(), 1u);
  EXPECT_FALSE(notified_[0].first);
  EXPECT_THAT(notified_[0].second, HasSubstr("none of the plugin's versions"));
}

TEST_F(KubeletSimulatorTest, ASkippedClaimIsAnError) {
  Start();
  KubeletSimulator sim(Registry(), {"v1.DRAPlugin"});
  ASSERT_THAT(sim.Register("dra.cpu", std::chrono::seconds(10)), IsOk());
  EXPECT_THAT(sim.Prepare({{"ns", "c", "skip1"}}),
              StatusIs(StatusCode::kInternal, HasSubstr("skipped claim skip1")));
}

TEST_F(KubeletSimulatorTest, NoPluginTimesOut) {
  KubeletSimulator sim(Registry(), {"v1.DRAPlugin"});
  EXPECT_THAT(sim.Register("dra.cpu", std::chrono::milliseconds(100)),
              StatusIs(StatusCode::kNotFound));
  EXPECT_THAT(sim.Prepare({{"ns", "c", "u"}}), StatusIs(StatusCode::kFailedPrecondition));
}

TEST_F(KubeletSimulatorTest, HealthStreamSendsAtOnceAndOnChange) {
  Start();
  KubeletSimulator sim(Registry(), {"v1.DRAPlugin"});
  ASSERT_THAT(sim.Register("dra.cpu", std::chrono::seconds(10)), IsOk());
  std::thread flip([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::lock_guard lock(health_.mu);
    health_.reports[0].state = DeviceHealthState::kUnhealthy;
    health_.reports[0].message = "CPU 3 went offline";
  });
  auto updates = sim.WatchHealth(2, std::chrono::seconds(30));
  flip.join();
  ASSERT_THAT(updates, IsOk());
  ASSERT_EQ(updates->size(), 2u);
  EXPECT_EQ((*updates)[0][0].health, "Healthy");
  EXPECT_EQ((*updates)[0][0].timeout_seconds, 30);
  EXPECT_EQ((*updates)[1][0].health, "Unhealthy");
  EXPECT_EQ((*updates)[1][0].message, "CPU 3 went offline");
}

TEST_F(KubeletSimulatorTest, CommandLine) {
  Start();
  const char* build = std::getenv("DRACPU_BUILD_DIR");
  ASSERT_NE(build, nullptr);
  const std::string cmd = std::string(build) +
                          "/tests/sim/kubelet/dracpu-sim-kubelet --registry-dir " + Registry() +
                          " prepare ns/c1/u1 ns/c2/bad2";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 1) << out;  // one claim failed
  EXPECT_THAT(
      out, HasSubstr("\"u1\":{\"devices\":[{\"requestNames\":[\"req\"],\"poolName\":\"node-a\""));
  EXPECT_THAT(out, HasSubstr("\"bad2\":{\"devices\":[],\"error\":\"claim ns/c2: bad\"}"));
}

}  // namespace
}  // namespace dracpu::sim
