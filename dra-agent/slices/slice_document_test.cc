#include "dra-agent/slices/slice_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::dra {
namespace {

using testing::SyntheticTopology;

TEST(SliceDocument, GroupedSliceShape) {
  CatalogOptions o;
  auto catalog = BuildDeviceCatalog(SyntheticTopology({1, 1, 2, 2}), o).value();
  PoolInfo pool{"node-a", "uid-1", 3, true, {}};
  auto chunks = ChunkDevices(catalog);
  ASSERT_EQ(chunks.size(), 1u);
  rapidjson::Document doc;
  doc.Parse(RenderResourceSlice(chunks[0], 1, 0, pool, "", "").c_str());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_STREQ(doc["metadata"]["generateName"].GetString(), "00000-dra.cpu-node-a-");
  EXPECT_STREQ(doc["metadata"]["ownerReferences"][0]["uid"].GetString(), "uid-1");
  EXPECT_TRUE(doc["metadata"]["ownerReferences"][0]["controller"].GetBool());
  const auto& spec = doc["spec"];
  EXPECT_STREQ(spec["driver"].GetString(), "dra.cpu");
  EXPECT_STREQ(spec["nodeName"].GetString(), "node-a");
  EXPECT_STREQ(spec["pool"]["name"].GetString(), "node-a");
  EXPECT_EQ(spec["pool"]["generation"].GetInt64(), 3);
  EXPECT_EQ(spec["pool"]["resourceSliceCount"].GetInt64(), 1);
  const auto& dev = spec["devices"][0];
  EXPECT_STREQ(dev["name"].GetString(), "cpudevnuma000");
  EXPECT_STREQ(dev["capacity"]["dra.cpu/cpu"]["value"].GetString(), "3");  // 4 CPUs - floor 1
  EXPECT_STREQ(dev["capacity"]["dra.cpu/cpu"]["requestPolicy"]["validRange"]["min"].GetString(),
               "1");
  EXPECT_TRUE(dev["allowMultipleAllocations"].GetBool());
  EXPECT_EQ(dev["attributes"]["resource.kubernetes.io/numaNode"]["int"].GetInt64(), 0);
  EXPECT_TRUE(dev["attributes"]["dra.cpu/smtEnabled"]["bool"].GetBool());
  EXPECT_STREQ(dev["nodeAllocatableResources"]["cpu"]["mapping"]["capacityKey"].GetString(),
               "dra.cpu/cpu");
}

TEST(SliceDocument, IndividualModeChunksBy128) {
  CatalogOptions o;
  o.mode = CpuDeviceMode::kIndividual;
  o.min_shared_cpus = 0;
  // 8 sockets x 1 NUMA x 64 cores x SMT2 = 1024 CPUs -> 8 slices.
  auto catalog = BuildDeviceCatalog(SyntheticTopology({8, 1, 64, 2}), o).value();
  auto chunks = ChunkDevices(catalog);
  ASSERT_EQ(chunks.size(), 8u);
  for (const auto& c : chunks) EXPECT_EQ(c.size(), 128u);
  EXPECT_EQ(chunks[7].back()->name, "cpudev1023");
  EXPECT_EQ(SliceGenerateName(10, "n"), "0000a-dra.cpu-n-");
  rapidjson::Document doc;
  doc.Parse(RenderResourceSlice(chunks[1], 8, 1, {"n", "", 1, true, {}}, "0001-x", "42").c_str());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_STREQ(doc["metadata"]["name"].GetString(), "0001-x");
  EXPECT_STREQ(doc["metadata"]["resourceVersion"].GetString(), "42");
  EXPECT_FALSE(doc["metadata"].HasMember("ownerReferences"));
  const auto& dev = doc["spec"]["devices"][0];
  EXPECT_FALSE(dev.HasMember("capacity"));
  EXPECT_FALSE(dev.HasMember("allowMultipleAllocations"));
  EXPECT_STREQ(dev["nodeAllocatableResources"]["cpu"]["mapping"]["deviceMultiplier"].GetString(),
               "1");
}

TEST(SliceDocument, ListAttributesHalveTheChunk) {
  CatalogOptions o;
  o.mode = CpuDeviceMode::kIndividual;
  o.min_shared_cpus = 0;
  o.expose_pcie_roots = true;
  CpuTopology t = SyntheticTopology({1, 1, 64, 2});
  t.pcie_roots = {{"pci0000:00", t.online}};
  auto chunks = ChunkDevices(BuildDeviceCatalog(t, o).value());
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].size(), 64u);
}

TEST(SliceDocument, EmptyCatalogStillPublishesOneSlice) {
  DeviceCatalog empty;
  auto chunks = ChunkDevices(empty);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_TRUE(chunks[0].empty());
  EXPECT_EQ(RenderDevicesJson(chunks[0], {}), "[]");
}

// What the server does not keep is not sent: no policy without consumable capacity, pcieRoot as
// a single string (one root) or not at all (several) without list attributes, no mapping without
// node-allocatable resources; chunks stay at 128 devices without lists.
TEST(SliceDocument, ShapeLeavesOutWhatTheServerDrops) {
  CatalogOptions o;
  o.expose_pcie_roots = true;
  o.publish_node_allocatable_mapping = true;
  CpuTopology t = SyntheticTopology({2, 1, 2, 2});  // NUMA 0 = CPUs 0-1,4-5; NUMA 1 = 2-3,6-7
  t.pcie_roots = {{"pci0000:00", CpuSet{0}}, {"pci0000:40", CpuSet{2}}, {"pci0000:80", CpuSet{3}}};
  const DeviceCatalog catalog = BuildDeviceCatalog(t, o).value();
  SliceShape shape;
  shape.consumable_capacity = false;
  shape.list_attributes = false;
  shape.node_allocatable = false;
  PoolInfo pool{"n", "u", 1, true, shape};
  rapidjson::Document doc;
  doc.Parse(RenderResourceSlice(ChunkDevices(catalog, shape)[0], 1, 0, pool, "", "").c_str());
  ASSERT_FALSE(doc.HasParseError());
  const auto& numa0 = doc["spec"]["devices"][0];
  const auto& numa1 = doc["spec"]["devices"][1];
  EXPECT_FALSE(numa0.HasMember("allowMultipleAllocations"));
  EXPECT_FALSE(numa0["capacity"]["dra.cpu/cpu"].HasMember("requestPolicy"));
  EXPECT_TRUE(numa0["capacity"]["dra.cpu/cpu"].HasMember("value"));
  EXPECT_FALSE(numa0.HasMember("nodeAllocatableResources"));
  EXPECT_STREQ(numa0["attributes"]["resource.kubernetes.io/pcieRoot"]["string"].GetString(),
               "pci0000:00");
  EXPECT_FALSE(numa1["attributes"].HasMember("resource.kubernetes.io/pcieRoot"));
  // The full shape: a list, the policy, the mapping.
  pool.shape = SliceShape{};
  doc.Parse(RenderResourceSlice(ChunkDevices(catalog)[0], 1, 0, pool, "", "").c_str());
  EXPECT_EQ(
      doc["spec"]["devices"][1]["attributes"]["resource.kubernetes.io/pcieRoot"]["strings"].Size(),
      2u);
  EXPECT_TRUE(doc["spec"]["devices"][0].HasMember("allowMultipleAllocations"));
}

TEST(SliceDocument, SingleStringPcieRootsKeep128DevicesPerSlice) {
  CatalogOptions o;
  o.mode = CpuDeviceMode::kIndividual;
  o.min_shared_cpus = 0;
  o.expose_pcie_roots = true;
  CpuTopology t = SyntheticTopology({1, 1, 64, 2});
  t.pcie_roots = {{"pci0000:00", t.online}};
  SliceShape no_lists;
  no_lists.list_attributes = false;
  EXPECT_EQ(ChunkDevices(BuildDeviceCatalog(t, o).value(), no_lists)[0].size(), 128u);
}

}  // namespace
}  // namespace dracpu::dra
