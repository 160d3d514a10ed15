// The device catalog and ResourceSlice documents on the 27 real machines of
// ../shared/sysfs-corpus, in every device mode: devices match the topology (one per NUMA node /
// socket with allocatable CPUs, one per published CPU), capacities add up to the allocatable
// CPUs minus the shared-pool floor, names are DNS labels and unique, and every slice stays
// within the API's limits (devices per slice, attributes per device).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <variant>

#include "common/topology_discovery.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/slices/slice_document.h"
#include "tests/integration/device_modes.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::dra {
namespace {

constexpr const auto& kModes = dracpu::testing::kAllDeviceModes;

class SlicesCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SlicesCorpusTest, EveryModeMatchesTheTopology) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = testing::ExtractCorpusMachine(shared, GetParam());
  ASSERT_THAT(tree, IsOk());
  auto fs = NewPosixFileSystem((*tree)->path());
  ASSERT_THAT(fs, IsOk());
  auto topology = DiscoverTopology(**fs);
  ASSERT_THAT(topology, IsOk());
  const std::regex dns_label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  for (const auto& m : kModes) {
    for (bool pcie : {false, true}) {
      SCOPED_TRACE(std::string(m.name) + (pcie ? " with pcieRoot" : ""));
      CatalogOptions o;
      o.mode = m.mode;
      o.group_by = m.group_by;
      o.expose_pcie_roots = pcie;
      o.min_shared_cpus = 1;
      auto catalog = BuildDeviceCatalog(*topology, o);
      ASSERT_THAT(catalog, IsOk());
      const int allocatable = topology->online.Count();
      std::set<std::string> names;
      CpuSet covered;
      int64_t capacity = 0;
      for (const CatalogDevice& d : catalog->devices) {
        EXPECT_TRUE(std::regex_match(d.name, dns_label)) << d.name;
        EXPECT_LE(d.name.size(), 63u);
        EXPECT_TRUE(names.insert(d.name).second) << "duplicate " << d.name;
        EXPECT_FALSE(covered.Intersects(d.cpus)) << d.name << " overlaps another device";
        covered |= d.cpus;
        EXPECT_LE(d.attributes.size() + (d.cpu_capacity ? 1 : 0), 32u) << d.name;
        capacity += d.cpu_capacity.value_or(1);
      }
      if (m.mode == CpuDeviceMode::kIndividual) {
        EXPECT_EQ(static_cast<int>(catalog->devices.size()), allocatable - 1);
        EXPECT_EQ(covered | catalog->floor, topology->online);
      } else {
        // NUMA-less CPUs (rule 2 of the corpus README) belong to no NUMA device.
        CpuSet in_nodes;
        for (const NumaNode& n : topology->numa_nodes) in_nodes |= n.cpus;
        const CpuSet& grouped = m.group_by == GroupBy::kNumaNode ? in_nodes : topology->online;
        EXPECT_EQ(capacity, grouped.Count() - 1);
        // Every grouped CPU is behind a device, except a group the one-CPU floor emptied.
        EXPECT_TRUE(covered.IsSubsetOf(grouped));
        EXPECT_LE((grouped - covered).Count(), 1);
      }
      const auto chunks = ChunkDevices(*catalog);
      // Devices without a local PCIe root carry no (empty) pcieRoot list.
      bool lists = false;
      for (const CatalogDevice& d : catalog->devices) lists = lists || d.uses_list_attributes;
      int total = 0;
      for (size_t i = 0; i < chunks.size(); ++i) {
        EXPECT_LE(chunks[i].size(),
                  static_cast<size_t>(lists ? kMaxDevicesPerSliceWithLists : kMaxDevicesPerSlice));
        total += static_cast<int>(chunks[i].size());
        rapidjson::Document doc;
        doc.Parse(RenderResourceSlice(chunks[i], static_cast<int>(chunks.size()),
                                      static_cast<int>(i), {"node-1", "uid-1", 1, true}, "", "")
                      .c_str());
        ASSERT_FALSE(doc.HasParseError());
        EXPECT_EQ(doc["spec"]["pool"]["resourceSliceCount"].GetInt64(),
                  static_cast<int64_t>(chunks.size()));
      }
      EXPECT_EQ(total, static_cast<int>(catalog->devices.size()));
    }
  }
}

// Issue 16 item 5: the hybrid Arm trees (cpu_capacity classes) publish dra.cpu/coreType per CPU
// in individual mode; the one-CPU floor withholds CPU 0, an e-core on both.
TEST(SlicesCorpus, HybridTreesPublishTheirCoreTypes) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  const struct {
    const char* machine;
    const char* p_cores;
    int e_devices;
  } kCases[] = {
      {"nvidia-gb10-arm-hybrid", "5-9,15-19", 9},
      {"arm-phone-a510-a710-a715-x3", "7", 6},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.machine);
    auto tree = testing::ExtractCorpusMachine(shared, c.machine);
    ASSERT_THAT(tree, IsOk());
    auto fs = NewPosixFileSystem((*tree)->path());
    ASSERT_THAT(fs, IsOk());
    auto topology = DiscoverTopology(**fs);
    ASSERT_THAT(topology, IsOk());
    CatalogOptions o;
    o.mode = CpuDeviceMode::kIndividual;
    o.min_shared_cpus = 1;
    auto catalog = BuildDeviceCatalog(*topology, o);
    ASSERT_THAT(catalog, IsOk());
    CpuSet p_cores;
    int e_devices = 0;
    for (const CatalogDevice& d : catalog->devices) {
      const std::string& type = std::get<std::string>(d.attributes.at("dra.cpu/coreType"));
      if (type == "p-core") p_cores |= d.cpus;
      e_devices += type == "e-core";
      EXPECT_TRUE(type == "p-core" || type == "e-core") << d.name << ": " << type;
    }
    EXPECT_EQ(p_cores.ToListString(), c.p_cores);
    EXPECT_EQ(e_devices, c.e_devices);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, SlicesCorpusTest,
                         ::testing::ValuesIn(testing::CorpusMachineParams()),
                         testing::CorpusParamName);

}  // namespace
}  // namespace dracpu::dra
