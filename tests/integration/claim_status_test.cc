// The claims' status.devices (issue 16 point 7, KEP-4817): ClaimStatusWriter and
// StatusReportingClaimPreparer against the in-process apiserver simulator, which validates the
// status as upstream's validateDeviceStatus and drops the field when its gate is off.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "dra-agent/agent/claim_status_writer.h"
#include "dra-agent/agent/status_reporting_claim_preparer.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/resources.h"
#include "tests/sim/apiserver/in_process_http_client.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::dra {
namespace {

using kube::FeatureState;
using kube::ServerFeature;
using ::testing::HasSubstr;

constexpr char kUid[] = "11111111-2222-4333-8444-555555555555";

// A claim allocated two dra.cpu devices and one of another driver, with that driver's status.
std::string ClaimJson(const std::string& uid = kUid) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"c","namespace":"ns","uid":")" +
         uid + R"(","generation":3},
    "spec":{"devices":{"requests":[{"name":"cpus"}]}},
    "status":{"allocation":{"devices":{"results":[
      {"request":"cpus","driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000"},
      {"request":"cpus","driver":"dra.cpu","pool":"node-1","device":"cpudevnuma001"},
      {"request":"gpu","driver":"gpu.example.com","pool":"node-1","device":"gpu0"}]}},
      "devices":[{"driver":"gpu.example.com","pool":"node-1","device":"gpu0",
                  "data":{"uuid":"GPU-1"}}]}})";
}

class ClaimStatusTest : public ::testing::Test {
 protected:
  void Start(const char* gates = "") {
    sim::SimState::Options so;
    so.gates = *sim::FeatureGates::ForVersion("1.36");
    ASSERT_THAT(so.gates.Set(gates), IsOk());
    state_ = std::make_shared<sim::SimState>(so);
    ASSERT_TRUE(state_->PutResourceClaim(ClaimJson()));
    auto fs = NewPosixFileSystem("/");
    ASSERT_THAT(fs, IsOk());
    fs_ = *std::move(fs);
    auto client = sim::NewInProcessKubeClient(state_, *fs_, clock_, random_);
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
    writer_ = std::make_unique<ClaimStatusWriter>(*client_, features_,
                                                  [] { return "2026-12-01T12:00:00Z"; });
  }

  rapidjson::Document Claim() {
    auto got = client_->Get(kube::ResourceClaimPath("ns", "c"));
    EXPECT_THAT(got, IsOk());
    rapidjson::Document d;
    d.Parse(got.ok() ? got->ToString().c_str() : "{}");
    return d;
  }

  // PUT status.devices as given, straight to the simulator.
  sim::SimResponse PutStatus(const std::string& devices) {
    rapidjson::Document d = Claim();
    rapidjson::Document dev;
    dev.Parse(devices.c_str());
    d["status"]["devices"].CopyFrom(dev, d.GetAllocator());
    kube::JsonObject o;
    o.doc().CopyFrom(d, o.allocator());
    return state_->Handle(
        {"PUT", kube::ResourceClaimPath("ns", "c") + "/status", "", o.ToString()});
  }

  ClaimStatusReport Report() {
    return {{"ns", "c", kUid},
            {{"node-1", "cpudevnuma000", std::nullopt, R"({"cpus":"2-3","numaNodes":[0]})"},
             {"node-1", "cpudevnuma001", std::nullopt, R"({"cpus":"8","numaNodes":[1]})"}}};
  }

  testing::FakeClock clock_;
  testing::FixedRandom random_{0.5};
  std::shared_ptr<sim::SimState> state_;
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<kube::KubeClient> client_;
  kube::ServerFeatures features_{clock_};
  std::unique_ptr<ClaimStatusWriter> writer_;
};

TEST_F(ClaimStatusTest, PrepareWritesOurDevicesAndKeepsOtherDrivers) {
  Start();
  ASSERT_THAT(writer_->Write(Report()), IsOk());
  rapidjson::Document c = Claim();
  const auto& devices = c["status"]["devices"];
  ASSERT_EQ(devices.Size(), 3u);
  EXPECT_STREQ(devices[0]["driver"].GetString(), "gpu.example.com");  // untouched
  EXPECT_STREQ(devices[1]["device"].GetString(), "cpudevnuma000");
  EXPECT_STREQ(devices[1]["data"]["cpus"].GetString(), "2-3");
  EXPECT_STREQ(devices[2]["data"]["cpus"].GetString(), "8");
  const auto& ready = devices[1]["conditions"][0];
  EXPECT_STREQ(ready["type"].GetString(), "Ready");
  EXPECT_STREQ(ready["status"].GetString(), "True");
  EXPECT_EQ(ready["observedGeneration"].GetInt64(), 3);
  EXPECT_TRUE(features_.Kept(ServerFeature::kResourceClaimDeviceStatus));
  EXPECT_EQ(writer_->stats().written, 2u);

  // A second Prepare of the same claim replaces our entries, it does not add more.
  ASSERT_THAT(writer_->Write(Report()), IsOk());
  EXPECT_EQ(Claim()["status"]["devices"].Size(), 3u);
}

TEST_F(ClaimStatusTest, UnprepareRemovesOnlyOurEntries) {
  Start();
  ASSERT_THAT(writer_->Write(Report()), IsOk());
  ASSERT_THAT(writer_->Write({{"ns", "c", kUid}, {}}), IsOk());
  rapidjson::Document c = Claim();
  ASSERT_EQ(c["status"]["devices"].Size(), 1u);
  EXPECT_STREQ(c["status"]["devices"][0]["driver"].GetString(), "gpu.example.com");
  EXPECT_EQ(writer_->stats().cleared, 1u);
  // Nothing of ours left: no write at all.
  const std::string rv = c["metadata"]["resourceVersion"].GetString();
  ASSERT_THAT(writer_->Write({{"ns", "c", kUid}, {}}), IsOk());
  EXPECT_EQ(std::string(Claim()["metadata"]["resourceVersion"].GetString()), rv);
}

TEST_F(ClaimStatusTest, GoneReCreatedOrDeallocatedClaimsAreSkipped) {
  Start();
  ASSERT_THAT(writer_->Write({{"ns", "gone", kUid}, Report().devices}), IsOk());
  ClaimStatusReport other = Report();
  other.claim.uid = "99999999-2222-4333-8444-555555555555";  // the name now has another uid
  ASSERT_THAT(writer_->Write(other), IsOk());
  ClaimStatusReport foreign = Report();
  foreign.devices = {{"node-1", "cpudevnuma007", std::nullopt, "{}"}};  // not allocated
  ASSERT_THAT(writer_->Write(foreign), IsOk());
  EXPECT_EQ(Claim()["status"]["devices"].Size(), 1u);
  EXPECT_EQ(writer_->stats().skipped, 3u);
  EXPECT_EQ(writer_->stats().failed, 0u);
}

TEST_F(ClaimStatusTest, GateOffTheServerDropsTheFieldAndWritesStop) {
  Start("DRAResourceClaimDeviceStatus=false");
  ASSERT_TRUE(state_->PutResourceClaim(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"c","namespace":"ns","uid":")" +
                                       std::string(kUid) + R"("},
    "status":{"allocation":{"devices":{"results":[
      {"request":"cpus","driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000"}]}}}})"));
  ClaimStatusReport r = Report();
  r.devices.resize(1);
  ASSERT_THAT(writer_->Write(r), IsOk());
  EXPECT_EQ(features_.State(ServerFeature::kResourceClaimDeviceStatus), FeatureState::kDropped);
  EXPECT_FALSE(Claim()["status"].HasMember("devices"));
  const std::string rv = Claim()["metadata"]["resourceVersion"].GetString();
  ASSERT_THAT(writer_->Write(r), IsOk());  // no request now
  EXPECT_EQ(std::string(Claim()["metadata"]["resourceVersion"].GetString()), rv);
  EXPECT_EQ(writer_->stats().skipped, 2u);
}

TEST_F(ClaimStatusTest, QueuedReportsAreWrittenOffThreadAndCoalesced) {
  Start();
  writer_->Report(Report());
  writer_->Report({{"ns", "c", kUid}, {}});  // released before the write: at most a clear
  writer_->Flush();
  EXPECT_EQ(Claim()["status"]["devices"].Size(), 1u);
  writer_->Report(Report());
  writer_->Flush();
  EXPECT_EQ(Claim()["status"]["devices"].Size(), 3u);
}

// The simulator refuses what upstream's validateDeviceStatus refuses.
TEST_F(ClaimStatusTest, SimulatorValidatesLikeUpstream) {
  Start();
  sim::SimResponse r =
      PutStatus(R"([{"driver":"dra.cpu","pool":"node-1","device":"cpudevnuma009"}])");
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr("status.devices[0]: Invalid value: \\\"dra.cpu/node-1/"
                                "cpudevnuma009\\\": must be an allocated device in the claim"));
  r = PutStatus(R"([{"driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000"},
                    {"driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000"}])");
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr("status.devices[1]: Duplicate value"));
  r = PutStatus(R"([{"driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000","data":[1]}])");
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr("status.devices[0].data: Invalid value"));
  const std::string big(11 * 1024, 'x');
  r = PutStatus(R"([{"driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000","data":{"x":")" +
                big + R"("}}])");
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr("status.devices[0].data: Too long"));
  r = PutStatus(R"([{"driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000",
                     "conditions":[{"type":"Ready","status":"Yes","reason":"not ok"}]}])");
  EXPECT_EQ(r.status, 422);
  EXPECT_THAT(r.body, HasSubstr("status.devices[0].conditions[0].status: Unsupported value"));
  EXPECT_THAT(r.body, HasSubstr("status.devices[0].conditions[0].reason: Invalid value"));
  EXPECT_THAT(r.body, HasSubstr("status.devices[0].conditions[0].lastTransitionTime: Required"));
  r = PutStatus(R"([{"driver":"dra.cpu","pool":"node-1","device":"cpudevnuma000","data":{}}])");
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST(ClaimDeviceDataTest, CpusNodesAndCoreType) {
  CpuTopology t = testing::SyntheticTopology({1, 2, 4, 2});  // 2 NUMA nodes, 8 cores x SMT2
  const CpuSet node0 = t.numa_nodes[0].cpus;
  const int other = *t.numa_nodes[1].cpus.begin();
  const CpuSet claim = CpuSet{*node0.begin(), other};
  rapidjson::Document d;
  d.Parse(ClaimDeviceData(t, claim, node0).c_str());
  EXPECT_STREQ(d["cpus"].GetString(), (claim & node0).ToListString().c_str());
  ASSERT_EQ(d["numaNodes"].Size(), 1u);
  EXPECT_EQ(d["numaNodes"][0].GetInt(), 0);
  EXPECT_FALSE(d.HasMember("coreType"));  // not a hybrid part
  EXPECT_STREQ(d["claimCPUs"].GetString(), claim.ToListString().c_str());
}

}  // namespace
}  // namespace dracpu::dra
