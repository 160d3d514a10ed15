// Issue 16 item 4: every node-wide placement key, set per claim under the same name in the
// claim's opaque `policy`, changes what Prepare grants (through CpuClaimPreparer, the claim JSON
// as the API server returns it, shared memory and CDI): each case compares the claim with the key
// against the same claim without it, on a machine where the key makes a difference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "dra-agent/allocator/topology_builder.h"
#include "dra-agent/prepare/cpu_claim_preparer.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/shm_test_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

// The nodes below name only what differs from the defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;

struct Node {
  std::vector<allocator::CpuRecord> records;
  CpuDeviceMode mode = CpuDeviceMode::kGrouped;
  GroupBy group_by = GroupBy::kNumaNode;
  CpuSet reserved;
};

// The outcome of one claim: its CPUs (empty on error), the error, and its shared-memory record.
struct Outcome {
  CpuSet cpus;
  std::string error;
  shm::ClaimSpec spec;
};

// One fresh node per call, so the claim with and without the key see the same free CPUs.
Outcome Prepare(const Node& node, const std::string& device, int count,
                const std::string& policy_json) {
  shm::testing::TempDir dir;
  CpuTopology topology = allocator::BuildTopologyFromRecords(node.records).value();
  auto index = allocator::TopologyIndex::Build(topology).value();
  CatalogOptions co;
  co.mode = node.mode;
  co.group_by = node.group_by;
  co.reserved = node.reserved;
  DeviceCatalog catalog = BuildDeviceCatalog(topology, co).value();
  auto segment =
      shm::Segment::Open(dir.File("s.shm"), shm::testing::TestOptions(shm::Role::kDraAgent))
          .value();
  std::filesystem::create_directories(dir.File("cdi"));
  auto fs = NewPosixFileSystem(dir.path()).value();
  CdiStore cdi(*fs, "cdi");
  std::string config;
  if (!policy_json.empty()) {
    config = R"({"source":"FromClaim","requests":["cpus"],"opaque":{"driver":"dra.cpu",)"
             R"("parameters":{"apiVersion":"v1alpha1","policy":)" +
             policy_json + "}}}";
  }
  const std::string claim =
      R"({"metadata":{"namespace":"ns","name":"c","uid":"u1"},"status":{"allocation":{"devices":)"
      R"({"results":[{"request":"cpus","driver":"dra.cpu","pool":"node-a","device":")" +
      device + R"(","consumedCapacity":{"dra.cpu/cpu":")" + std::to_string(count) +
      R"("}}],"config":[)" + config + "]}}}}";
  PreparerOptions po;
  po.pool_name = "node-a";
  dracpu::testing::FakeClock clock;
  CpuClaimPreparer preparer(
      topology, index, catalog, *segment, cdi,
      [&](const std::string&, const std::string&) -> Result<std::string> { return claim; }, po,
      nullptr, clock);
  Outcome out;
  out.error = preparer.Prepare({{"ns", "c", "u1"}}).at("u1").error;
  if (auto c = segment->FindClaim("u1").value(); c) {
    out.spec = shm::DecodeClaim(*c);
    out.cpus = out.spec.cpus;
  }
  return out;
}

std::vector<allocator::CpuRecord> Shape(int sockets, int numa, int l3, int cores, int threads) {
  return dracpu::testing::SyntheticRecords({sockets, numa, l3 * cores, threads, l3});
}

// CPUs per NUMA node of `cpus`.
std::map<int, int> PerNuma(const Node& node, const CpuSet& cpus) {
  std::map<int, int> out;
  for (const allocator::CpuRecord& r : node.records) {
    if (cpus.Contains(r.cpu)) ++out[r.numa];
  }
  return out;
}

TEST(ClaimPolicy, FullPCPUsOnly) {
  const Node node{Shape(1, 1, 1, 4, 2)};  // cores c and c+4
  EXPECT_EQ(Prepare(node, "cpudevnuma000", 3, "").error, "");
  EXPECT_THAT(Prepare(node, "cpudevnuma000", 3, R"({"fullPCPUsOnly":true})").error,
              HasSubstr("not a whole number of cores of 2 threads (fullPCPUsOnly)"));
  const Outcome whole = Prepare(node, "cpudevnuma000", 4, R"({"fullPCPUsOnly":true})");
  ASSERT_EQ(whole.error, "");
  for (int core = 0; core < 4; ++core) {
    EXPECT_EQ(whole.cpus.Contains(core), whole.cpus.Contains(core + 4))
        << whole.cpus.ToListString();
  }
}

TEST(ClaimPolicy, DistributeCPUsAcrossNUMASplitsEvenly) {
  // Two NUMA nodes of 8 CPUs in one socket device. 12 CPUs need both nodes (kubelet distributes
  // only then): packed fills one node, distributed splits 6 + 6.
  const Node node{Shape(1, 2, 1, 4, 2), CpuDeviceMode::kGrouped, GroupBy::kSocket};
  const Outcome packed = Prepare(node, "cpudevsocket000", 12, "");
  ASSERT_EQ(packed.error, "");
  EXPECT_EQ(PerNuma(node, packed.cpus), (std::map<int, int>{{0, 8}, {1, 4}}))
      << packed.cpus.ToListString();
  const Outcome spread =
      Prepare(node, "cpudevsocket000", 12, R"({"distributeCPUsAcrossNUMA":true})");
  ASSERT_EQ(spread.error, "");
  EXPECT_EQ(PerNuma(node, spread.cpus), (std::map<int, int>{{0, 6}, {1, 6}}))
      << spread.cpus.ToListString();
}

TEST(ClaimPolicy, AlignBySocketKeepsACrossNumaClaimInOneSocket) {
  // 2 sockets x 3 NUMA nodes x 2 one-thread cores: N0 {0,1} N1 {2,3} N2 {4,5} | N3 {6,7} ...
  // Free: socket 0 has 2+1+1, socket 1 only N3's 2. Four CPUs fit in no single node: the fewest
  // nodes are N0+N3 (two sockets); aligned by socket they are N0+N1+N2.
  const Node node{Shape(2, 3, 1, 2, 1), CpuDeviceMode::kGrouped, GroupBy::kMachine,
                  CpuSet::ParseList("3,5,8-11").value()};
  const Outcome numa = Prepare(node, "cpudevmachine", 4, "");
  ASSERT_EQ(numa.error, "");
  EXPECT_EQ(numa.cpus.ToListString(), "0-1,6-7");
  const Outcome socket = Prepare(node, "cpudevmachine", 4, R"({"alignBySocket":true})");
  ASSERT_EQ(socket.error, "");
  EXPECT_EQ(socket.cpus.ToListString(), "0-2,4");
}

TEST(ClaimPolicy, PreferAlignCPUsByUncoreCacheAndItsOldSpelling) {
  // One NUMA node, two L3 groups of 3 SMT2 cores (L3 0: CPUs 0-2,6-8); CPU 4 reserved.
  const Node node{Shape(1, 1, 2, 3, 2), CpuDeviceMode::kGrouped, GroupBy::kNumaNode, CpuSet{4}};
  const Outcome aligned = Prepare(node, "cpudevnuma000", 6, "");  // on by default
  ASSERT_EQ(aligned.error, "");
  EXPECT_EQ(aligned.cpus.ToListString(), "0-2,6-8");  // one whole L3 group
  const Outcome off =
      Prepare(node, "cpudevnuma000", 6, R"({"preferAlignCPUsByUncoreCache":false})");
  ASSERT_EQ(off.error, "");
  EXPECT_NE(off.cpus, aligned.cpus);
  EXPECT_EQ(Prepare(node, "cpudevnuma000", 6, R"({"alignByUncoreCache":false})").cpus, off.cpus);
}

TEST(ClaimPolicy, DistributeCPUsAcrossCores) {
  const Node node{Shape(1, 1, 1, 4, 2)};
  const Outcome packed = Prepare(node, "cpudevnuma000", 2, "");
  ASSERT_EQ(packed.error, "");
  EXPECT_EQ(packed.cpus.ToListString(), "0,4");  // one whole core
  const Outcome spread = Prepare(node, "cpudevnuma000", 2, R"({"distributeCPUsAcrossCores":true})");
  ASSERT_EQ(spread.error, "");
  EXPECT_EQ(spread.cpus.ToListString(), "0-1");  // one thread of each of two cores
}

TEST(ClaimPolicy, CoreType) {
  // Two SMT2 P-cores (CPUs 0,1 and 2,3) and four E-cores (4-7).
  Node node;
  for (int cpu = 0; cpu < 4; ++cpu) {
    node.records.push_back({cpu, cpu / 2, 0, 0, 0, CoreType::kPerformance});
  }
  for (int cpu = 4; cpu < 8; ++cpu) {
    node.records.push_back({cpu, cpu - 2, 0, 0, 0, CoreType::kEfficiency});
  }
  const Outcome p = Prepare(node, "cpudevnuma000", 2, "");
  ASSERT_EQ(p.error, "");
  EXPECT_TRUE(p.cpus.IsSubsetOf(CpuSet::ParseList("0-3").value())) << p.cpus.ToListString();
  const Outcome e = Prepare(node, "cpudevnuma000", 2, R"({"coreType":"efficiency"})");
  ASSERT_EQ(e.error, "");
  EXPECT_TRUE(e.cpus.IsSubsetOf(CpuSet::ParseList("4-7").value())) << e.cpus.ToListString();
}

TEST(ClaimPolicy, AlignMemory) {
  const Node node{Shape(1, 2, 1, 2, 1), CpuDeviceMode::kGrouped, GroupBy::kNumaNode};
  const Outcome plain = Prepare(node, "cpudevnuma001", 1, "");
  ASSERT_EQ(plain.error, "");
  EXPECT_EQ(plain.spec.flags & shm::kClaimAlignMemory, 0u);
  const Outcome aligned = Prepare(node, "cpudevnuma001", 1, R"({"alignMemory":true})");
  ASSERT_EQ(aligned.error, "");
  EXPECT_NE(aligned.spec.flags & shm::kClaimAlignMemory, 0u);  // the nri-agent sets cpuset.mems
  EXPECT_EQ(aligned.spec.mems, std::vector<int>{1});
}

}  // namespace
}  // namespace dracpu::dra
