#include "dra-agent/allocator/topology_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu::allocator {
namespace {

using ::testing::HasSubstr;

TEST(TopologyBuilderTest, GroupsSiblingsAndNamesCoresByLowestCpu) {
  // Two sockets, SMT2, siblings i and i+4; record core ids 10..13 are not CPU ids.
  std::vector<CpuRecord> records;
  for (int cpu = 0; cpu < 8; ++cpu) {
    records.push_back({cpu, 10 + cpu % 4, cpu % 4 / 2, cpu % 4 / 2, cpu % 4 / 2});
  }
  Result<CpuTopology> topo = BuildTopologyFromRecords(records);
  ASSERT_THAT(topo, IsOk());
  ASSERT_EQ(topo->cores.size(), 4u);
  EXPECT_EQ(topo->cores[1].id, 1);
  EXPECT_EQ(topo->cores[1].cpus, CpuSet({1, 5}));
  EXPECT_EQ(topo->FindCpu(5)->core, 1);
  EXPECT_EQ(topo->packages.size(), 2u);
  EXPECT_EQ(topo->numa_nodes[1].cpus, CpuSet({2, 3, 6, 7}));
  EXPECT_TRUE(topo->smt_enabled);
  EXPECT_TRUE(topo->warnings.empty());
}

TEST(TopologyBuilderTest, SplitsAnL3IdReusedAcrossSockets) {
  // Kubelet fixtures leave UncoreCacheID 0 on both sockets; an L3 never spans sockets.
  const std::vector<CpuRecord> records = {{0, 0, 0, 0, 0}, {1, 1, 1, 1, 0}};
  Result<CpuTopology> topo = BuildTopologyFromRecords(records);
  ASSERT_THAT(topo, IsOk());
  EXPECT_EQ(topo->l3_caches.size(), 2u);
  EXPECT_NE(topo->FindCpu(0)->l3, topo->FindCpu(1)->l3);
  EXPECT_THAT(topo->warnings, ::testing::ElementsAre(HasSubstr("renumbered")));
}

struct BadCase {
  const char* name;
  std::vector<CpuRecord> records;
  const char* message;
};

class TopologyBuilderErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(TopologyBuilderErrorTest, RejectsWithAMessageNamingTheCpu) {
  EXPECT_THAT(BuildTopologyFromRecords(GetParam().records),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TopologyBuilderErrorTest,
    ::testing::Values(
        BadCase{"empty", {}, "no CPUs"},
        BadCase{"duplicate", {{0, 0, 0, 0, 0}, {0, 1, 0, 0, 0}}, "cpu 0 is listed more than once"},
        BadCase{"out_of_range", {{9000, 0, 0, 0, 0}}, "cpu 9000: id out of range"},
        BadCase{"negative_core", {{0, -1, 0, 0, 0}}, "negative core"},
        // What kubelet's per-socket core ids do (allocation.md §(d)5): one "core" on two sockets.
        BadCase{"core_across_sockets", {{0, 0, 0, 0, 0}, {96, 0, 1, 1, 1}}, "share core 0"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dracpu::allocator
