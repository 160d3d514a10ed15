// SlicePublisher against a simulator whose feature gates change under it (issue 13 points 3 and
// 5): the shape follows what the server keeps (probed, then re-checked on every answer), a
// refused write is reported once per cause, counted by code and reason and flagged for /readyz,
// and a refusal that a re-probe explains is repaired within the same sync.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "dra-agent/kube/kube_client.h"
#include "dra-agent/slices/slice_publisher.h"
#include "tests/sim/apiserver/in_process_http_client.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::dra {
namespace {

using kube::FeatureState;
using kube::ServerFeature;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kNode[] = "node-1";

sim::FeatureGates Gates(const char* version, const char* set = "") {
  sim::FeatureGates g = *sim::FeatureGates::ForVersion(version);
  EXPECT_THAT(g.Set(set), IsOk());
  return g;
}

// 2 NUMA nodes of 4 cores x SMT2; with pcieRoot, NUMA 0 has one root and NUMA 1 two.
DeviceCatalog Catalog(bool pcie, int min_shared = 1) {
  CpuTopology t = testing::SyntheticTopology({2, 1, 4, 2});
  t.pcie_roots = {{"pci0000:00", CpuSet{0}}, {"pci0000:40", CpuSet{4}}, {"pci0000:80", CpuSet{5}}};
  CatalogOptions o;
  o.expose_pcie_roots = pcie;
  o.min_shared_cpus = min_shared;
  return BuildDeviceCatalog(t, o).value();
}

class GatesTest : public ::testing::Test {
 protected:
  void Start(const sim::FeatureGates& gates, const std::string& node = kNode) {
    sim::SimState::Options so;
    so.gates = gates;
    state_ = std::make_shared<sim::SimState>(so);
    state_->AddNode(node, "uid-1");
    auto fs = NewPosixFileSystem("/");
    ASSERT_THAT(fs, IsOk());
    fs_ = *std::move(fs);
    auto client = sim::NewInProcessKubeClient(state_, *fs_, clock_, random_);
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
    SlicePublisherOptions po;
    po.node_name = node;
    po.features = &features_;
    po.metrics = &metrics_;
    po.on_report = [this](const PublisherReport& r) { reports_.push_back(r); };
    auto publisher = SlicePublisher::Create(*client_, clock_, random_, po);
    ASSERT_THAT(publisher, IsOk());
    publisher_ = *std::move(publisher);
  }

  // The stored device `name` of the only slice.
  rapidjson::Document Device(const std::string& name) {
    rapidjson::Document out;
    for (const std::string& text : state_->ResourceSlices()) {
      rapidjson::Document d;
      d.Parse(text.c_str());
      for (auto& dev : d["spec"]["devices"].GetArray()) {
        if (dev["name"].GetString() == name) out.CopyFrom(dev, out.GetAllocator());
      }
    }
    return out;
  }
  int Reports(PublisherReport::Kind kind) const {
    int n = 0;
    for (const PublisherReport& r : reports_) n += r.kind == kind ? 1 : 0;
    return n;
  }
  double ErrorsCounted(const std::string& code, const std::string& reason) {
    const std::string text = metrics_.RenderText();
    const std::string series = "dra_cpu_resourceslice_publish_errors_total{code=\"" + code +
                               "\",reason=\"" + reason + "\"} ";
    const size_t at = text.find(series);
    return at == std::string::npos ? 0 : std::stod(text.substr(at + series.size()));
  }
  void DeleteAllSlices() {
    for (const std::string& text : state_->ResourceSlices()) {
      rapidjson::Document d;
      d.Parse(text.c_str());
      state_->DeleteResourceSlice(d["metadata"]["name"].GetString());
    }
  }

  testing::FakeClock clock_;
  DefaultRandom random_;
  MetricsRegistry metrics_;
  kube::ServerFeatures features_{clock_};
  std::vector<PublisherReport> reports_;
  std::shared_ptr<sim::SimState> state_;
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<SlicePublisher> publisher_;
};

TEST_F(GatesTest, At134TheGroupedShapeHasNoPolicyAndThatIsSaid) {
  Start(Gates("1.34"));
  publisher_->SetDesired(Catalog(false));
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_EQ(features_.State(ServerFeature::kConsumableCapacity), FeatureState::kDropped);
  rapidjson::Document d = Device("cpudevnuma001");
  EXPECT_FALSE(d.HasMember("allowMultipleAllocations"));
  EXPECT_FALSE(d["capacity"]["dra.cpu/cpu"].HasMember("requestPolicy"));
  EXPECT_STREQ(d["capacity"]["dra.cpu/cpu"]["value"].GetString(), "8");
  EXPECT_THAT(state_->DroppedFields(), IsEmpty());
  const SlicePublisherStats st = publisher_->stats();
  ASSERT_THAT(st.shape_notes, SizeIs(1));
  EXPECT_THAT(st.shape_notes[0], HasSubstr("requestPolicy and allowMultipleAllocations left out"));
  EXPECT_THAT(st.shape_notes[0], HasSubstr("DRAConsumableCapacity off"));
  EXPECT_EQ(Reports(PublisherReport::Kind::kShape), 1);
  EXPECT_GE(st.probes, 1u);
}

TEST_F(GatesTest, ListAttributesOffGiveASingleStringOrNothingAndTheLogSaysWhich) {
  Start(Gates("1.36"));
  publisher_->SetDesired(Catalog(true));
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_STREQ(Device("cpudevnuma000")["attributes"]["resource.kubernetes.io/pcieRoot"]["string"]
                   .GetString(),
               "pci0000:00");
  EXPECT_FALSE(Device("cpudevnuma001")["attributes"].HasMember("resource.kubernetes.io/pcieRoot"));
  const std::vector<std::string> notes = publisher_->stats().shape_notes;
  ASSERT_THAT(notes, SizeIs(2));
  EXPECT_THAT(notes[0], HasSubstr("left out of cpudevnuma001 (2 PCIe roots)"));
  EXPECT_THAT(notes[1], HasSubstr("single string on cpudevnuma000"));
  EXPECT_THAT(state_->Rejections(), IsEmpty());
}

TEST_F(GatesTest, ARefusalExplainedByAGateTurnedOffIsRepairedInTheSameSync) {
  Start(Gates("1.36", "DRAListTypeAttributes=true"));
  publisher_->SetDesired(Catalog(true));
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_EQ(
      Device("cpudevnuma001")["attributes"]["resource.kubernetes.io/pcieRoot"]["strings"].Size(),
      2u);
  // The cluster is reconfigured; our slices are wiped (as the kubelet does on a restart).
  state_->SetFeatureGates(Gates("1.36"));
  DeleteAllSlices();
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_EQ(features_.State(ServerFeature::kListTypeAttributes), FeatureState::kDropped);
  EXPECT_FALSE(Device("cpudevnuma001")["attributes"].HasMember("resource.kubernetes.io/pcieRoot"));
  EXPECT_THAT(state_->Rejections(), SizeIs(1)) << "one refused POST, then the new shape";
  EXPECT_FALSE(publisher_->stats().rejected);
  // One cause per device that carried a list: both NUMA devices.
  EXPECT_EQ(Reports(PublisherReport::Kind::kRefused), 2);
  EXPECT_EQ(Reports(PublisherReport::Kind::kRecovered), 1);
  EXPECT_EQ(ErrorsCounted("422", "Invalid"), 1);
}

TEST_F(GatesTest, AFieldDroppedFromAnAnswerIsLearnedAndRepublishedWithout) {
  Start(Gates("1.36"));
  publisher_->SetDesired(Catalog(false));
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  // Consumable capacity turned off after the probe: a new slice comes back without the policy.
  state_->SetFeatureGates(Gates("1.35"));
  DeleteAllSlices();
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_EQ(features_.State(ServerFeature::kConsumableCapacity), FeatureState::kDropped);
  EXPECT_GE(publisher_->stats().dropped_fields, 2u);
  EXPECT_THAT(features_.Finding(ServerFeature::kConsumableCapacity).evidence, HasSubstr("lacks"));
  // The next sync writes the shape the server keeps; from then on nothing is dropped.
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  const size_t dropped = state_->DroppedFields().size();
  publisher_->SetDesired(Catalog(false, 2));
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_EQ(state_->DroppedFields().size(), dropped);
  EXPECT_FALSE(Device("cpudevnuma000").HasMember("allowMultipleAllocations"));
}

TEST_F(GatesTest, AGateTurnedOnIsNoticedAtTheNextProbe) {
  Start(Gates("1.34"));
  publisher_->SetDesired(Catalog(false));
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  state_->SetFeatureGates(Gates("1.36"));  // upgraded
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_FALSE(Device("cpudevnuma000").HasMember("allowMultipleAllocations")) << "not due yet";
  clock_.Advance(std::chrono::minutes(11));
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_EQ(features_.State(ServerFeature::kConsumableCapacity), FeatureState::kKept);
  EXPECT_TRUE(Device("cpudevnuma000")["allowMultipleAllocations"].GetBool());
  EXPECT_TRUE(publisher_->stats().shape_notes.empty());
}

TEST_F(GatesTest, ARefusedWriteIsReportedOnceCountedAndFlagged) {
  Start(Gates("1.36"), "Node_1");  // not a DNS subdomain: every slice is refused
  publisher_->SetDesired(Catalog(false));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(publisher_->SyncOnce().ok());
  const SlicePublisherStats st = publisher_->stats();
  EXPECT_TRUE(st.rejected);
  EXPECT_FALSE(st.published);
  ASSERT_FALSE(st.errors.empty());
  bool names_node = false;
  for (const PublishErrorCause& c : st.errors) {
    EXPECT_EQ(c.code, "422");
    EXPECT_EQ(c.reason, "Invalid");
    names_node = names_node || c.field == "spec.nodeName";
    EXPECT_GE(c.count, 3u);
  }
  EXPECT_TRUE(names_node);
  // Each distinct cause once, however often it recurs.
  EXPECT_EQ(Reports(PublisherReport::Kind::kRefused), static_cast<int>(st.errors.size()));
  EXPECT_GE(ErrorsCounted("422", "Invalid"), 3);
  EXPECT_EQ(st.publish_errors, static_cast<uint64_t>(ErrorsCounted("422", "Invalid")));
}

TEST_F(GatesTest, AnOutageIsCountedButIsNotARefusal) {
  Start(Gates("1.36"));
  publisher_->SetDesired(Catalog(false));
  sim::Fault f;
  f.method = "POST";
  f.path_prefix = "/apis/resource.k8s.io/v1/resourceslices";
  f.action = sim::FaultAction::kStatus;
  f.status = 503;
  f.reason = "ServiceUnavailable";
  f.count = 1;
  state_->AddFault(f);
  EXPECT_FALSE(publisher_->SyncOnce().ok());
  EXPECT_FALSE(publisher_->stats().rejected);
  EXPECT_EQ(ErrorsCounted("503", "ServiceUnavailable"), 1);
  ASSERT_THAT(publisher_->SyncOnce(), IsOk());
  EXPECT_TRUE(publisher_->stats().errors.empty());
}

}  // namespace
}  // namespace dracpu::dra
