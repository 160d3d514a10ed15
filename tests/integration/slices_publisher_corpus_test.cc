// Every machine of ../shared/sysfs-corpus, in every device mode (grouped numanode / socket /
// machine, individual; with and without pcieRoot), published by one SlicePublisher to the
// simulator, which validates each slice as the API server does (strict field validation: an
// unknown field is refused). The stored slices must match the catalog exactly: count, names in
// order, capacities, owner, one generation, resourceSliceCount. Switching modes on one publisher
// also exercises the obsolete-slice and generation rules on real shapes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/topology_discovery.h"
#include "dra-agent/slices/slice_document.h"
#include "dra-agent/slices/slice_publisher.h"
#include "tests/integration/device_modes.h"
#include "tests/integration/slices_publisher_support.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::dra {
namespace {

constexpr const auto& kModes = dracpu::testing::kAllDeviceModes;

class SlicesPublisherCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SlicesPublisherCorpusTest, EveryModePublishesValidMatchingSlices) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = dracpu::testing::ExtractCorpusMachine(shared, GetParam());
  ASSERT_THAT(tree, IsOk());
  auto fs = NewPosixFileSystem((*tree)->path());
  ASSERT_THAT(fs, IsOk());
  auto topology = DiscoverTopology(**fs);
  ASSERT_THAT(topology, IsOk());

  SystemClock clock;
  DefaultRandom random;
  pubtest::SimEnv env;
  env.Start(clock);
  SlicePublisherOptions po;
  po.node_name = pubtest::kNode;
  auto publisher = SlicePublisher::Create(env.client(), clock, random, po);
  ASSERT_THAT(publisher, IsOk());
  int64_t last_generation = 0;
  for (const auto& m : kModes) {
    for (bool pcie : {false, true}) {
      SCOPED_TRACE(std::string(m.name) + (pcie ? " with pcieRoot" : ""));
      CatalogOptions o;
      o.mode = m.mode;
      o.group_by = m.group_by;
      o.expose_pcie_roots = pcie;
      auto catalog = BuildDeviceCatalog(*topology, o);
      ASSERT_THAT(catalog, IsOk());
      const auto chunks = ChunkDevices(*catalog);
      bool lists = false;
      for (const CatalogDevice& d : catalog->devices) lists = lists || d.uses_list_attributes;
      (*publisher)->SetDesired(*catalog);
      ASSERT_THAT((*publisher)->SyncOnce(), IsOk());

      const auto slices = env.Slices();
      ASSERT_EQ(slices.size(), chunks.size());
      std::vector<std::string> names;
      std::map<std::string, std::string> capacity;
      for (size_t i = 0; i < slices.size(); ++i) {
        const pubtest::StoredSlice& s = slices[i];
        EXPECT_EQ(s.name.rfind(SliceGenerateName(static_cast<int>(i), pubtest::kNode), 0), 0u)
            << s.name;
        EXPECT_EQ(s.count, static_cast<int64_t>(chunks.size()));
        EXPECT_EQ(s.generation, slices[0].generation);
        EXPECT_EQ(s.owner_uid, pubtest::kNodeUid);
        EXPECT_EQ(s.device_names.size(), chunks[i].size());
        EXPECT_LE(s.device_names.size(),
                  static_cast<size_t>(lists ? kMaxDevicesPerSliceWithLists : kMaxDevicesPerSlice));
        names.insert(names.end(), s.device_names.begin(), s.device_names.end());
        capacity.insert(s.cpu_capacity.begin(), s.cpu_capacity.end());
      }
      std::vector<std::string> want_names;
      std::map<std::string, std::string> want_capacity;
      for (const CatalogDevice& d : catalog->devices) {
        want_names.push_back(d.name);
        if (d.cpu_capacity) want_capacity[d.name] = std::to_string(*d.cpu_capacity);
      }
      EXPECT_EQ(names, want_names);
      EXPECT_EQ(capacity, want_capacity);
      EXPECT_GE(slices[0].generation, last_generation);
      last_generation = slices[0].generation;
      EXPECT_TRUE((*publisher)->published());
      // Published state is a fixed point: a second sync writes nothing.
      const auto before = (*publisher)->stats();
      ASSERT_THAT((*publisher)->SyncOnce(), IsOk());
      const auto after = (*publisher)->stats();
      EXPECT_EQ(after.creates + after.updates + after.deletes,
                before.creates + before.updates + before.deletes);
    }
  }
  EXPECT_THAT(env.state().Warnings(), ::testing::IsEmpty());
}

std::vector<std::string> Machines() {
  auto shared = dracpu::testing::SharedDir();
  if (!shared) return {"(no ../shared)"};
  return dracpu::testing::CorpusMachines(*shared);
}

INSTANTIATE_TEST_SUITE_P(Corpus, SlicesPublisherCorpusTest, ::testing::ValuesIn(Machines()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace dracpu::dra
