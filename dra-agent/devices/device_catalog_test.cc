#include "dra-agent/devices/device_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using testing::SyntheticTopology;

// 2 sockets x 1 NUMA x 4 cores x SMT2: CPUs 0-7 first threads, 8-15 siblings.
const CpuTopology kTwoSocket = SyntheticTopology({2, 1, 4, 2});

TEST(DeviceCatalog, GroupedByNumaLikeTheReference) {
  CatalogOptions o;
  o.min_shared_cpus = 0;
  auto c = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(c->devices, ElementsAre(Field(&CatalogDevice::name, "cpudevnuma000"),
                                      Field(&CatalogDevice::name, "cpudevnuma001")));
  const CatalogDevice& d = c->devices[1];
  EXPECT_EQ(d.cpus.ToListString(), "4-7,12-15");
  EXPECT_EQ(*d.cpu_capacity, 8);
  EXPECT_TRUE(d.allow_multiple_allocations);
  EXPECT_EQ(std::get<int64_t>(d.attributes.at("resource.kubernetes.io/numaNode")), 1);
  EXPECT_EQ(std::get<int64_t>(d.attributes.at("dra.cpu/numaNodeID")), 1);
  EXPECT_EQ(std::get<int64_t>(d.attributes.at("dra.net/numaNode")), 1);
  EXPECT_EQ(std::get<int64_t>(d.attributes.at("dra.cpu/socketID")), 1);
  EXPECT_EQ(std::get<int64_t>(d.attributes.at("dra.cpu/numCPUs")), 8);
  EXPECT_TRUE(std::get<bool>(d.attributes.at("dra.cpu/smtEnabled")));
  EXPECT_EQ(d.capacity_policy->min, 1);
  EXPECT_EQ(d.capacity_policy->max, 8);
  EXPECT_EQ(d.capacity_policy->step, 1);
  EXPECT_EQ(d.capacity_policy->default_value, 8);
}

struct PolicyCase {
  int64_t capacity;
  int64_t granule;
  bool valid;
  int64_t min, max;
  std::optional<int64_t> step;
};

// Every capacity a device can have gets a policy the API server accepts (rules 42-55 of
// resourceslice-validation.md; the simulator checks them on the whole corpus) or none at all.
TEST(DeviceCatalog, CapacityPolicyIsValidForEveryCapacity) {
  const PolicyCase cases[] = {
      {0, 1, false, 0, 0, {}}, {1, 1, true, 1, 1, {}},  {2, 1, true, 1, 2, 1},
      {7, 1, true, 1, 7, 1},   {1, 2, false, 0, 0, {}}, {2, 2, true, 2, 2, {}},
      {6, 2, true, 2, 6, 2},   {7, 2, true, 2, 6, 2},   {3, 4, false, 0, 0, {}},
      {12, 4, true, 4, 12, 4},
  };
  for (const PolicyCase& c : cases) {
    SCOPED_TRACE("capacity " + std::to_string(c.capacity) + " granule " +
                 std::to_string(c.granule));
    const std::optional<CapacityPolicy> p = MakeCapacityPolicy(c.capacity, c.granule);
    ASSERT_EQ(p.has_value(), c.valid);
    if (!p) continue;
    EXPECT_EQ(p->min, c.min);
    EXPECT_EQ(p->max, c.max);
    EXPECT_EQ(p->step, c.step);
    EXPECT_EQ(p->default_value, p->max) << "no capacity entry = the whole device";
    EXPECT_LE(p->max, c.capacity);
    if (p->step) {
      EXPECT_LE(p->min + *p->step, c.capacity);
      EXPECT_EQ((p->max - p->min) % *p->step, 0);
    }
  }
}

TEST(DeviceCatalog, FloorAndReservedComeOutOfTheFirstDevice) {
  CatalogOptions o;
  o.reserved = CpuSet{0, 8};
  o.min_shared_cpus = 2;
  auto c = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(*c->devices[0].cpu_capacity, 4);  // 8 - 2 reserved - 2 floor
  EXPECT_EQ(*c->devices[1].cpu_capacity, 8);
  EXPECT_EQ(c->allocatable.ToListString(), "1-7,9-15");
  // Non-strict reservation: reserved CPUs serve the shared pool, no floor needed from devices.
  o.strict_cpu_reservation = false;
  EXPECT_EQ(*BuildDeviceCatalog(kTwoSocket, o)->devices[0].cpu_capacity, 6);
}

TEST(DeviceCatalog, FullPcpusOnlyStepsByCore) {
  CatalogOptions o;
  o.full_pcpus_only = true;
  o.min_shared_cpus = 1;
  auto c = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->devices[0].capacity_policy->step, 2);
  EXPECT_EQ(c->devices[0].capacity_policy->min, 2);
  EXPECT_EQ(*c->devices[0].cpu_capacity, 6);  // 8 - 1 floor = 7, rounded down to whole cores
}

TEST(DeviceCatalog, SocketAndMachineGrouping) {
  CatalogOptions o;
  o.min_shared_cpus = 0;
  o.group_by = GroupBy::kSocket;
  auto s = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->devices, ElementsAre(Field(&CatalogDevice::name, "cpudevsocket000"),
                                      Field(&CatalogDevice::name, "cpudevsocket001")));
  EXPECT_EQ(s->devices[0].attributes.count("resource.kubernetes.io/numaNode"), 0u);
  o.group_by = GroupBy::kMachine;
  auto m = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(m, IsOk());
  ASSERT_THAT(m->devices, ElementsAre(Field(&CatalogDevice::name, "cpudevmachine")));
  EXPECT_EQ(*m->devices[0].cpu_capacity, 16);
}

TEST(DeviceCatalog, IndividualNumbersSiblingsAdjacently) {
  CatalogOptions o;
  o.mode = CpuDeviceMode::kIndividual;
  o.min_shared_cpus = 0;
  auto c = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(c, IsOk());
  ASSERT_EQ(c->devices.size(), 16u);
  // Reference example: cpudev000 = CPU 0, cpudev001 = its sibling.
  EXPECT_EQ(c->devices[0].cpus.ToListString(), "0");
  EXPECT_EQ(c->devices[1].cpus.ToListString(), "8");
  EXPECT_EQ(c->devices[2].cpus.ToListString(), "1");
  EXPECT_FALSE(c->devices[0].cpu_capacity.has_value());
  EXPECT_FALSE(c->devices[0].allow_multiple_allocations);
  EXPECT_EQ(std::get<int64_t>(c->devices[1].attributes.at("dra.cpu/cpuID")), 8);
  EXPECT_EQ(std::get<int64_t>(c->devices[1].attributes.at("dra.cpu/coreID")), 0);
  EXPECT_EQ(std::get<std::string>(c->devices[1].attributes.at("dra.cpu/coreType")), "standard");
  // The floor keeps the lowest CPU unpublished.
  o.min_shared_cpus = 1;
  auto f = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ(f->floor.ToListString(), "0");
  EXPECT_EQ(f->devices.size(), 15u);
  // CPUs are walked in ascending order: CPU 1 and its sibling 9 come first; CPU 8, whose sibling
  // is unpublished, stands alone when the walk reaches it.
  EXPECT_EQ(f->devices[0].cpus.ToListString(), "1");
  EXPECT_EQ(f->devices[1].cpus.ToListString(), "9");
  EXPECT_EQ(f->devices[13].cpus.ToListString(), "15");
  EXPECT_EQ(f->devices[14].cpus.ToListString(), "8");
}

// CPU hotplug in individual mode (found by tests/e2e/node_hotplug_e2e.py): the rebuilt catalog
// renumbers, so names must be mapped back to the start-up ones.
TEST(DeviceCatalog, KeepStartupDeviceNamesAfterACpuGoesAway) {
  CatalogOptions o;
  o.mode = CpuDeviceMode::kIndividual;
  auto startup = BuildDeviceCatalog(kTwoSocket, o);
  ASSERT_THAT(startup, IsOk());
  CatalogOptions gone = o;
  gone.reserved = CpuSet::ParseList("2").value();  // CPU 2 no longer allocatable, like offline
  auto rebuilt = BuildDeviceCatalog(kTwoSocket, gone);
  ASSERT_THAT(rebuilt, IsOk());
  ASSERT_EQ(rebuilt->devices.size(), 14u);
  EXPECT_EQ(rebuilt->devices[2].name, "cpudev002");
  EXPECT_EQ(rebuilt->devices[2].cpus.ToListString(), "3");  // renumbered: cpudev002 was CPU 2
  KeepStartupDeviceNames(*startup, *rebuilt);
  ASSERT_EQ(rebuilt->devices.size(), 14u);
  std::vector<std::string> names;
  for (const CatalogDevice& d : rebuilt->devices) {
    names.push_back(d.name);
    const CatalogDevice* s = startup->Find(d.name);
    ASSERT_NE(s, nullptr) << d.name;
    EXPECT_EQ(s->cpus, d.cpus) << d.name;
    EXPECT_FALSE(d.cpus.Contains(2));
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(startup->Find("cpudev002")->cpus.ToListString(), "2");
  EXPECT_EQ(rebuilt->Find("cpudev002"), nullptr);
  // Grouped names are stable: nothing to do.
  auto grouped = BuildDeviceCatalog(kTwoSocket, CatalogOptions{});
  auto grouped2 = BuildDeviceCatalog(kTwoSocket, CatalogOptions{});
  KeepStartupDeviceNames(*grouped, *grouped2);
  EXPECT_EQ(grouped2->devices.size(), grouped->devices.size());
}

TEST(DeviceCatalog, RefusesWhenTheFloorCannotBeMet) {
  CatalogOptions o;
  o.reserved = CpuSet::Range(0, 14);
  o.min_shared_cpus = 2;
  EXPECT_THAT(BuildDeviceCatalog(kTwoSocket, o),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("fewer than minSharedCPUs 2")));
}

TEST(DeviceCatalog, PcieRootsAreListAttributes) {
  CpuTopology t = kTwoSocket;
  t.pcie_roots = {{"pci0000:00", CpuSet::Range(0, 3)}, {"pci0000:80", CpuSet::Range(4, 7)}};
  CatalogOptions o;
  o.expose_pcie_roots = true;
  auto c = BuildDeviceCatalog(t, o);
  ASSERT_THAT(c, IsOk());
  EXPECT_THAT(std::get<std::vector<std::string>>(
                  c->devices[1].attributes.at("resource.kubernetes.io/pcieRoot")),
              ElementsAre("pci0000:80"));
  EXPECT_TRUE(c->devices[1].uses_list_attributes);
}

// The API refuses an empty list attribute value: a device with no local PCIe root (here: a
// machine without PCI data) gets no pcieRoot attribute, and slices keep 128 devices.
TEST(DeviceCatalog, NoPcieRootMeansNoAttribute) {
  CpuTopology t = kTwoSocket;
  t.pcie_roots = {{"pci0000:00", CpuSet::Range(0, 3)}};
  CatalogOptions o;
  o.expose_pcie_roots = true;
  auto c = BuildDeviceCatalog(t, o);
  ASSERT_THAT(c, IsOk());
  EXPECT_TRUE(c->devices[0].attributes.contains("resource.kubernetes.io/pcieRoot"));
  EXPECT_FALSE(c->devices[1].attributes.contains("resource.kubernetes.io/pcieRoot"));
  EXPECT_FALSE(c->devices[1].uses_list_attributes);
  t.pcie_roots.clear();
  c = BuildDeviceCatalog(t, o);
  ASSERT_THAT(c, IsOk());
  for (const CatalogDevice& d : c->devices) {
    EXPECT_FALSE(d.attributes.contains("resource.kubernetes.io/pcieRoot")) << d.name;
    EXPECT_FALSE(d.uses_list_attributes) << d.name;
  }
}

}  // namespace
}  // namespace dracpu::dra
