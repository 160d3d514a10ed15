// Valid slices on every machine, in every mode, at every Kubernetes version (issue 13): the 27
// machines of ../shared/sysfs-corpus, grouped numanode / socket / machine and individual, with
// and without --expose-pcie-roots, fullPCPUsOnly and the KEP-5517 node-allocatable mapping, each
// published by a real SlicePublisher (dry-run feature probes included) to the apiserver simulator
// at the 1.34, 1.36 and 1.37 gate presets, plus 1.37 with the alpha gates DRAListTypeAttributes
// and DRANodeAllocatableResources on (the full shape). Required: 0 rejections (400/422), 0
// fields dropped by a disabled gate, 0 unknown-field warnings, a fixed point after each sync,
// and stored slices that carry exactly what the preset keeps.
//
// In process (InProcessHttpClient: no sockets) so the whole matrix stays fast; the summary line
// printed at the end gives the combinations and the time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <string>

#include "common/topology_discovery.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/slices/slice_document.h"
#include "dra-agent/slices/slice_publisher.h"
#include "tests/integration/device_modes.h"
#include "tests/sim/apiserver/in_process_http_client.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::dra {
namespace {

constexpr char kNode[] = "node-1";
constexpr char kPcieRoot[] = "resource.kubernetes.io/pcieRoot";

struct Preset {
  const char* name;
  const char* version;
  const char* gates;
  bool policy;   // consumable capacity kept
  bool lists;    // list attributes kept
  bool mapping;  // node-allocatable resources kept
};
constexpr Preset kPresets[] = {
    {"1.34", "1.34", "", false, false, false},
    {"1.36", "1.36", "", true, false, false},
    {"1.37", "1.37", "", true, false, false},
    {"1.37+alpha", "1.37", "DRAListTypeAttributes=true,DRANodeAllocatableResources=true", true,
     true, true},
};

std::atomic<int> g_combinations{0};
std::atomic<int64_t> g_micros{0};

const rapidjson::Value* Member(const rapidjson::Value& v, const char* k) {
  auto it = v.FindMember(k);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

// Checks one stored device against its catalog device at `preset`.
void CheckDevice(const rapidjson::Value& stored, const CatalogDevice& d, const Preset& preset,
                 bool mapping_asked) {
  SCOPED_TRACE(d.name);
  ASSERT_STREQ(stored["name"].GetString(), d.name.c_str());
  const rapidjson::Value* caps = Member(stored, "capacity");
  if (d.cpu_capacity) {
    ASSERT_NE(caps, nullptr);
    const rapidjson::Value& cpu = (*caps)["dra.cpu/cpu"];
    EXPECT_EQ(cpu["value"].GetString(), std::to_string(*d.cpu_capacity));
    const rapidjson::Value* policy = Member(cpu, "requestPolicy");
    EXPECT_EQ(policy != nullptr, preset.policy);
    EXPECT_EQ(Member(stored, "allowMultipleAllocations") != nullptr, preset.policy);
    if (policy != nullptr) {
      const CapacityPolicy& want = *d.capacity_policy;
      EXPECT_EQ((*policy)["default"].GetString(), std::to_string(want.default_value));
      EXPECT_EQ((*policy)["validRange"]["max"].GetString(), std::to_string(want.max));
    }
  } else {
    EXPECT_EQ(caps, nullptr);
  }
  const auto root = d.attributes.find(kPcieRoot);
  const rapidjson::Value* stored_root = Member(stored["attributes"], kPcieRoot);
  if (root == d.attributes.end()) {
    EXPECT_EQ(stored_root, nullptr);
  } else {
    const auto& roots = std::get<std::vector<std::string>>(root->second);
    if (preset.lists) {
      ASSERT_NE(stored_root, nullptr);
      EXPECT_EQ((*stored_root)["strings"].Size(), roots.size());
    } else if (roots.size() == 1) {
      ASSERT_NE(stored_root, nullptr);
      EXPECT_EQ((*stored_root)["string"].GetString(), roots[0]);
    } else {
      EXPECT_EQ(stored_root, nullptr) << "several roots and no list attributes";
    }
  }
  EXPECT_EQ(Member(stored, "nodeAllocatableResources") != nullptr, preset.mapping && mapping_asked);
}

class SlicesGatesCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SlicesGatesCorpusTest, EveryModeIsAcceptedAtEveryPreset) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  const auto start = std::chrono::steady_clock::now();
  auto tree = testing::ExtractCorpusMachine(shared, GetParam());
  ASSERT_THAT(tree, IsOk());
  auto fs = NewPosixFileSystem((*tree)->path());
  ASSERT_THAT(fs, IsOk());
  auto topology = DiscoverTopology(**fs);
  ASSERT_THAT(topology, IsOk());
  auto root_fs = NewPosixFileSystem("/");
  ASSERT_THAT(root_fs, IsOk());

  for (const Preset& preset : kPresets) {
    SCOPED_TRACE(std::string("Kubernetes ") + preset.name);
    sim::SimState::Options so;
    so.gates = *sim::FeatureGates::ForVersion(preset.version);
    ASSERT_THAT(so.gates.Set(preset.gates), IsOk());
    auto state = std::make_shared<sim::SimState>(so);
    state->AddNode(kNode, "uid-node-1");
    SystemClock clock;
    DefaultRandom random;
    kube::ClusterConfig config;
    config.server = "http://sim";
    kube::ClientOptions co;
    co.max_attempts = 1;
    co.strict_field_validation = true;  // an unknown field is a 400, never silently dropped
    auto client = kube::KubeClient::Create(
        config, std::make_unique<sim::InProcessHttpClient>(state), **root_fs, clock, random, co);
    ASSERT_THAT(client, IsOk());
    kube::ServerFeatures features(clock);
    SlicePublisherOptions po;
    po.node_name = kNode;
    po.features = &features;
    auto publisher = SlicePublisher::Create(**client, clock, random, po);
    ASSERT_THAT(publisher, IsOk());

    for (const auto& m : testing::kAllDeviceModes) {
      for (bool pcie : {false, true}) {
        for (bool full_cores : {false, true}) {
          for (bool mapping : {false, true}) {
            SCOPED_TRACE(std::string(m.name) + (pcie ? " +pcieRoot" : "") +
                         (full_cores ? " +fullPCPUsOnly" : "") + (mapping ? " +mapping" : ""));
            CatalogOptions o;
            o.mode = m.mode;
            o.group_by = m.group_by;
            o.expose_pcie_roots = pcie;
            o.full_pcpus_only = full_cores;
            o.publish_node_allocatable_mapping = mapping;
            auto catalog = BuildDeviceCatalog(*topology, o);
            ASSERT_THAT(catalog, IsOk());
            (*publisher)->SetDesired(*catalog);
            ASSERT_THAT((*publisher)->SyncOnce(), IsOk());
            // What is stored: every device, in order, in the preset's shape.
            // Sorted by name: the hex index first, so in the catalog's order.
            const std::vector<std::string> texts = state->ResourceSlices();
            size_t next = 0;
            for (const std::string& text : texts) {
              rapidjson::Document doc;
              doc.Parse(text.c_str());
              ASSERT_FALSE(doc.HasParseError());
              EXPECT_EQ(doc["spec"]["pool"]["resourceSliceCount"].GetInt64(),
                        static_cast<int64_t>(texts.size()));
              for (const auto& stored : doc["spec"]["devices"].GetArray()) {
                ASSERT_LT(next, catalog->devices.size());
                CheckDevice(stored, catalog->devices[next++], preset, mapping);
              }
            }
            EXPECT_EQ(next, catalog->devices.size());
            // A fixed point: nothing more to write.
            const SlicePublisherStats before = (*publisher)->stats();
            ASSERT_THAT((*publisher)->SyncOnce(), IsOk());
            const SlicePublisherStats after = (*publisher)->stats();
            EXPECT_EQ(after.creates + after.updates + after.deletes,
                      before.creates + before.updates + before.deletes);
            ++g_combinations;
          }
        }
      }
    }
    EXPECT_EQ(features.State(kube::ServerFeature::kConsumableCapacity),
              preset.policy ? kube::FeatureState::kKept : kube::FeatureState::kDropped);
    // Probed only on machines with PCIe roots (a catalog without lists never needs to know).
    EXPECT_NE(features.State(kube::ServerFeature::kListTypeAttributes),
              preset.lists ? kube::FeatureState::kDropped : kube::FeatureState::kKept);
    EXPECT_EQ(features.State(kube::ServerFeature::kNodeAllocatableResources),
              preset.mapping ? kube::FeatureState::kKept : kube::FeatureState::kDropped);
    EXPECT_THAT(state->Rejections(), ::testing::IsEmpty());
    EXPECT_THAT(state->DroppedFields(), ::testing::IsEmpty());
    EXPECT_THAT(state->Warnings(), ::testing::IsEmpty());
    const SlicePublisherStats st = (*publisher)->stats();
    EXPECT_EQ(st.publish_errors, 0u);
    EXPECT_EQ(st.dropped_fields, 0u);
  }
  g_micros += std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
}

INSTANTIATE_TEST_SUITE_P(Corpus, SlicesGatesCorpusTest,
                         ::testing::ValuesIn(testing::CorpusMachineParams()),
                         testing::CorpusParamName);

// The numbers the issue asks for, on one line.
class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    if (g_combinations == 0) return;
    std::printf(
        "slices_gates_corpus: %d combinations (machines x presets x modes x pcieRoot x "
        "fullPCPUsOnly x mapping) published and checked in %.1f s; rejections and dropped fields "
        "are asserted 0 above\n",
        g_combinations.load(), static_cast<double>(g_micros.load()) / 1e6);
  }
};
const auto* const kSummary = ::testing::AddGlobalTestEnvironment(new Summary);

}  // namespace
}  // namespace dracpu::dra
