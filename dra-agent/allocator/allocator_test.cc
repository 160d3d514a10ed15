// Allocator behaviour: the weaknesses of kubelet's greedy algorithm listed in
// ../shared/spec/allocation.md §(d), each shown strictly better on the spec's own input and
// kubelet answer, and the options on synthetic machines.
#include "dra-agent/allocator/allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "dra-agent/allocator/placement_metrics.h"
#include "dra-agent/allocator/topology_builder.h"
#include "tests/testing/case_topologies.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::allocator {
namespace {

using ::testing::HasSubstr;

struct Machine {
  CpuTopology topology;
  TopologyIndex index;
};

Machine FromTopology(const CpuTopology& topology) {
  Result<TopologyIndex> index = TopologyIndex::Build(topology);
  EXPECT_THAT(index, IsOk());
  return {topology, *std::move(index)};
}

Machine Synthetic(const testing::SyntheticShape& shape) {
  Result<CpuTopology> topo = BuildTopologyFromRecords(testing::SyntheticRecords(shape));
  EXPECT_THAT(topo, IsOk());
  return FromTopology(*topo);
}

Result<CpuSet> Take(const Machine& m, const CpuSet& available, int count,
                    std::vector<std::pair<std::string, std::string>> options = {},
                    CpuSet reserved = {}, std::vector<int> hint = {}) {
  ASSIGN_OR_RETURN(PlacementPolicy parsed, ParseKubeletOptions(options));
  return Allocate(m.index, {available, count, reserved, hint}, parsed);
}

// Groups of one kind (L3 groups or NUMA nodes) that are wholly inside `free`.
template <typename Groups>
int FullyFree(const Groups& groups, const CpuSet& free) {
  int n = 0;
  for (const auto& g : groups) n += !g.cpus.Empty() && g.cpus.IsSubsetOf(free);
  return n;
}

int Types(const CpuTopology& t, const CpuSet& cpus) {
  bool seen[3] = {false, false, false};
  for (int cpu : cpus) seen[static_cast<int>(t.FindCpu(cpu)->type)] = true;
  return seen[0] + seen[1] + seen[2];
}

// --- allocation.md §(d) -----------------------------------------------------------------------

class WeaknessTest : public ::testing::Test {
 protected:
  static Machine Load(const std::string& dir, const std::string& name) {
    Result<CpuTopology> topo = testing::LoadCaseTopology(dir, name);
    EXPECT_THAT(topo, IsOk());
    return FromTopology(*topo);
  }
};

// §(d)1: kubelet takes the whole core of the fuller NUMA node first and then crosses to the other.
TEST_F(WeaknessTest, D1FullCoresFirstNoLongerCrossesNuma) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoDualSocketHT");
  const CpuSet available = CpuSet::Range(0, 7) | CpuSet({9, 11});
  Result<CpuSet> ours = Take(m, available, 4);
  ASSERT_THAT(ours, IsOk());
  const PlacementMetrics kubelet = ComputeMetrics(m.index, {0, 1, 6, 7});
  EXPECT_EQ(kubelet.numa_span, 2);
  EXPECT_EQ(ComputeMetrics(m.index, *ours).numa_span, 1);
  EXPECT_LT(ComputeMetrics(m.index, *ours).QualityKey(), kubelet.QualityKey());
}

// §(d)2: the partial-L3 step takes the lowest core ids of the L3 and crosses a NUMA boundary on
// the SNC2 Xeon (interleaved NUMA ids).
TEST_F(WeaknessTest, D2UncoreStepStaysInsideOneNumaNode) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "nri2Socket4Node40CoreSysfs");
  Result<CpuSet> ours =
      Take(m, m.topology.online, 8, {{"prefer-align-cpus-by-uncorecache", "true"}});
  ASSERT_THAT(ours, IsOk());
  const PlacementMetrics kubelet = ComputeMetrics(m.index, {0, 1, 2, 3, 40, 41, 42, 43});
  EXPECT_EQ(kubelet.numa_span, 2);
  EXPECT_EQ(ComputeMetrics(m.index, *ours).numa_span, 1);
  EXPECT_EQ(ComputeMetrics(m.index, *ours).partial_cores, 0);
  EXPECT_LT(ComputeMetrics(m.index, *ours).QualityKey(), kubelet.QualityKey());
}

// §(d)2, kubelet's own fixture: L3 id 0 covers both sockets of topoDualSocketHT, request 3 gives
// {0,1,6} across sockets.
TEST_F(WeaknessTest, D2UncoreStepOnSharedL3IdStaysInOneSocket) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoDualSocketHT");
  Result<CpuSet> ours =
      Take(m, m.topology.online, 3, {{"prefer-align-cpus-by-uncorecache", "true"}});
  ASSERT_THAT(ours, IsOk());
  const PlacementMetrics kubelet = ComputeMetrics(m.index, {0, 1, 6});
  EXPECT_EQ(kubelet.socket_span, 2);
  EXPECT_LT(ComputeMetrics(m.index, *ours).QualityKey(), kubelet.QualityKey());
}

// §(d)2, last example: 1 CPU with the uncore step moves to the emptier socket ({1}), breaking a
// fully free socket; the spans tie, the damage does not.
TEST_F(WeaknessTest, D2OneCpuDoesNotBreakTheFullyFreeSocket) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoDualSocketHT");
  const CpuSet available = {1, 2, 3, 4, 5, 7, 8, 9, 10, 11};
  Result<CpuSet> ours = Take(m, available, 1, {{"prefer-align-cpus-by-uncorecache", "true"}});
  ASSERT_THAT(ours, IsOk());
  const CpuSet kubelet = {1};
  EXPECT_EQ(ComputeMetrics(m.index, *ours).QualityKey(),
            ComputeMetrics(m.index, kubelet).QualityKey());
  EXPECT_EQ(FullyFree(m.topology.numa_nodes, available - kubelet), 0);
  EXPECT_EQ(FullyFree(m.topology.numa_nodes, available - *ours), 1) << ours->ToListString();
}

// §(d)3: the partial-L3 step tries cores 4,5,6 by id, fails on the busy CPU 6 and breaks the
// fully free L3 0 ({0,1,2,8,9,10}); cores 4,5,7 of L3 1 fit exactly.
TEST_F(WeaknessTest, D3PartialL3TakeKeepsTheFreeL3Whole) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoUncoreSingleSocketSMT");
  const CpuSet available = m.topology.online - CpuSet({6});
  Result<CpuSet> ours = Take(m, available, 6, {{"prefer-align-cpus-by-uncorecache", "true"}});
  ASSERT_THAT(ours, IsOk());
  const CpuSet kubelet = {0, 1, 2, 8, 9, 10};
  EXPECT_LE(ComputeMetrics(m.index, *ours).QualityKey(),
            ComputeMetrics(m.index, kubelet).QualityKey());
  EXPECT_EQ(FullyFree(m.topology.l3_caches, available - kubelet), 0);
  EXPECT_EQ(FullyFree(m.topology.l3_caches, available - *ours), 1) << ours->ToListString();
}

// §(d)4: on the i7-12850HX (E-cores 0-7 single-threaded, P-cores 8-15 + siblings 16-23) with
// CPUs 0-1 reserved, kubelet gives 4 and 6 CPUs on E-cores, and mixes types once E-cores are
// partly used ({2,3,8,9,16,17}; here: E-cores 4-7 in use).
struct HybridCase {
  const char* name;
  CpuSet available;
  int count;
  CpuSet kubelet;
};

class HybridWeaknessTest : public WeaknessTest, public ::testing::WithParamInterface<HybridCase> {};

TEST_P(HybridWeaknessTest, D4PrefersPerformanceCoresAndNeverMixes) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoSingleSocketSingleNumaPerSocketPCoreHTMonolithicUncore");
  const HybridCase& c = GetParam();
  Result<CpuSet> ours = Take(m, c.available, c.count, {}, CpuSet({0, 1}));
  ASSERT_THAT(ours, IsOk());
  EXPECT_LE(ComputeMetrics(m.index, *ours).QualityKey(),
            ComputeMetrics(m.index, c.kubelet).QualityKey());
  EXPECT_EQ(Types(m.topology, *ours), 1);
  for (int cpu : *ours) EXPECT_EQ(m.topology.FindCpu(cpu)->type, CoreType::kPerformance) << cpu;
  // kubelet: E-cores only, or a mix.
  bool kubelet_all_p = true;
  for (int cpu : c.kubelet)
    kubelet_all_p &= m.topology.FindCpu(cpu)->type == CoreType::kPerformance;
  EXPECT_FALSE(kubelet_all_p);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HybridWeaknessTest,
    ::testing::Values(HybridCase{"four_idle", CpuSet::Range(0, 23), 4, {2, 3, 4, 5}},
                      HybridCase{"six_idle", CpuSet::Range(0, 23), 6, CpuSet::Range(2, 7)},
                      HybridCase{"six_e_cores_busy",
                                 CpuSet::Range(0, 3) | CpuSet::Range(8, 23),
                                 6,
                                 {2, 3, 8, 9, 16, 17}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(WeaknessTest, D4CoreTypeOptionSelectsEfficiencyOrAny) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoSingleSocketSingleNumaPerSocketPCoreHTMonolithicUncore");
  Result<CpuSet> e = Take(m, m.topology.online, 4, {{"core-type", "efficiency"}}, CpuSet({0, 1}));
  ASSERT_THAT(e, IsOk());
  for (int cpu : *e) EXPECT_EQ(m.topology.FindCpu(cpu)->type, CoreType::kEfficiency) << cpu;
  Result<CpuSet> any = Take(m, m.topology.online, 6, {{"core-type", "any"}}, CpuSet({0, 1}));
  ASSERT_THAT(any, IsOk());
  EXPECT_EQ(Types(m.topology, *any), 1);
}

// Issue 16 item 5: one core type per claim unless coreType is any. With CPUs 0-1 reserved the
// part has 6 free E-cores (2-7) and 16 P-core threads (8-23): 16 fit on P-cores alone, 17 on
// neither type alone and are refused rather than mixed, unless the claim says any.
TEST_F(WeaknessTest, D4NeverMixesCoreTypesUnlessAny) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoSingleSocketSingleNumaPerSocketPCoreHTMonolithicUncore");
  Result<CpuSet> p = Take(m, m.topology.online, 16, {}, CpuSet({0, 1}));
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(*p, CpuSet::Range(8, 23));
  // P-cores partly taken: the E-cores alone, not a mix.
  Result<CpuSet> e = Take(m, m.topology.online - CpuSet::Range(8, 19), 6, {}, CpuSet({0, 1}));
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(*e, CpuSet::Range(2, 7));
  EXPECT_THAT(Take(m, m.topology.online, 17, {}, CpuSet({0, 1})),
              StatusIs(StatusCode::kResourceExhausted,
                       ::testing::HasSubstr("no single core type can hold 17 CPUs")));
  Result<CpuSet> mixed = Take(m, m.topology.online, 17, {{"core-type", "any"}}, CpuSet({0, 1}));
  ASSERT_THAT(mixed, IsOk());
  EXPECT_EQ(Types(m.topology, *mixed), 2);
}

// §(d)5: kubelet keys cores by the fixture's CoreID, which restarts on socket 1 of the EPYC 9654
// NPS2 fixture: CPU i and i+96 become one "core". With full-pcpus-only and CPU 0 reserved it
// also withholds CPU 96 (a "sibling" on the other socket), so a request for every other CPU is
// refused; with real cores it fits.
TEST_F(WeaknessTest, D5CoreIdsUniquePerSocketDoNotMergeSockets) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  Result<std::vector<testing::CaseCpu>> cpus =
      testing::LoadCaseCpus(dir, "topoDualSocketMultiNumaPerSocketUncore");
  ASSERT_THAT(cpus, IsOk());
  // kubelet's admission: free physical CPUs = free - all "siblings" of reserved CPUs.
  int kubelet_physical = 0;
  for (const auto& c : *cpus) kubelet_physical += c.source_core != 0;
  const Machine m = Load(dir, "topoDualSocketMultiNumaPerSocketUncore");
  const int request = m.topology.online.Count() - 1;
  EXPECT_LT(kubelet_physical, request);  // kubelet: SMTAlignmentError, CausedByPhysicalCPUs
  Result<CpuSet> ours =
      Take(m, m.topology.online, request, {{"full-pcpus-only", "true"}}, CpuSet({0}));
  ASSERT_THAT(ours, IsOk());
  EXPECT_EQ(*ours, m.topology.online - CpuSet({0}));
  // And the records kubelet sees (CoreID only) are refused outright, never merged.
  std::vector<CpuRecord> kubelet_view;
  for (const auto& c : *cpus) {
    CpuRecord r = c.record;
    r.core = c.source_core;
    kubelet_view.push_back(r);
  }
  EXPECT_THAT(BuildTopologyFromRecords(kubelet_view),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("share core")));
}

// §(d)6/7: distributed 128 CPUs on the 8-NUMA EPYC 7742: NUMA {0,1,2,3} (one socket) and
// {0,1,2,7} (two sockets) balance equally, and kubelet's slice aliasing predicts the second.
// We order by sockets spanned before balance.
TEST_F(WeaknessTest, D6DistributedSplitPrefersOneSocket) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const Machine m = Load(dir, "topoDualSocketMultiNumaPerSocketHTLarge");
  Result<CpuSet> ours = Take(
      m, m.topology.online, 128,
      {{"distribute-cpus-across-numa", "true"}, {"prefer-align-cpus-by-uncorecache", "false"}});
  ASSERT_THAT(ours, IsOk());
  const PlacementMetrics metrics = ComputeMetrics(m.index, *ours);
  EXPECT_EQ(metrics.numa_span, 4);
  EXPECT_EQ(metrics.socket_span, 1);
  CpuSet kubelet;  // NUMA 0,1,2,7: 32 CPUs each
  for (int numa : {0, 1, 2, 7}) kubelet |= m.topology.numa_nodes[numa].cpus;
  EXPECT_EQ(ComputeMetrics(m.index, kubelet).socket_span, 2);
  EXPECT_LT(metrics.QualityKey(), ComputeMetrics(m.index, kubelet).QualityKey());
  // Even split: 32 per node.
  for (const NumaNode& n : m.topology.numa_nodes) {
    const int in_node = (n.cpus & *ours).Count();
    EXPECT_TRUE(in_node == 0 || in_node == 32) << "node " << n.id << ": " << in_node;
  }
}

// Every topology of the case data (25, including those the development cases do not use) under
// every option set, on random free sets: the hard constraints hold, and a request fails only
// when the free CPUs (whole free cores under full-pcpus-only) cannot hold it.
TEST_F(WeaknessTest, EveryCaseTopologyMeetsHardConstraintsUnderEveryOptionSet) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  Result<std::vector<std::string>> names = testing::CaseTopologyNames(dir);
  ASSERT_THAT(names, IsOk());
  const std::vector<std::vector<std::pair<std::string, std::string>>> option_sets = {
      {},
      {{"full-pcpus-only", "true"}},
      {{"prefer-align-cpus-by-uncorecache", "false"}},
      {{"distribute-cpus-across-cores", "true"}},
      {{"distribute-cpus-across-numa", "true"}, {"prefer-align-cpus-by-uncorecache", "false"}},
      {{"distribute-cpus-across-numa", "true"},
       {"full-pcpus-only", "true"},
       {"prefer-align-cpus-by-uncorecache", "false"}},
      {{"align-by-socket", "true"}, {"core-type", "efficiency"}},
  };
  std::mt19937 rng(3);
  int topologies = 0;
  for (const std::string& name : *names) {
    SCOPED_TRACE(name);
    const Machine m = Load(dir, name);
    ++topologies;
    for (const auto& options : option_sets) {
      ASSERT_THAT(ParseKubeletOptions(options), IsOk());
      const PlacementPolicy parsed = *ParseKubeletOptions(options);
      for (int round = 0; round < 12; ++round) {
        const int busy_percent = static_cast<int>(rng() % 80);
        CpuSet free;
        for (int cpu : m.topology.online) {
          if (static_cast<int>(rng() % 100) >= busy_percent) free.Set(cpu);
        }
        const int count = 1 + static_cast<int>(rng() % std::max(1, free.Count()));
        std::vector<int> hint;
        if (round % 3 == 0)
          hint.push_back(m.topology.numa_nodes[rng() % m.topology.numa_nodes.size()].id);
        Result<CpuSet> got = Allocate(m.index, {free, count, {}, hint}, parsed);
        int whole = 0;
        for (const Core& core : m.topology.cores)
          whole += core.cpus.IsSubsetOf(free) ? core.cpus.Count() : 0;
        const int width = m.index.uniform_width();
        // On hybrid parts a claim is of one core type unless coreType is any.
        int one_type = free.Count();
        if (m.index.hybrid() && parsed.core_type != CoreTypePreference::kAny) {
          std::map<CoreType, int> by_type;
          for (int cpu : free) ++by_type[m.topology.FindCpu(cpu)->type];
          one_type = 0;
          for (const auto& [type, n] : by_type) one_type = std::max(one_type, n);
        }
        const bool feasible =
            parsed.full_pcpus_only
                ? (width > 0 ? count % width == 0 && count <= whole : count <= whole)
                : count <= one_type;
        if (!got.ok()) {
          // On hybrid parts whole cores of mixed widths may not add up; everything else must fit.
          EXPECT_TRUE(!feasible || (parsed.full_pcpus_only && width == 0))
              << got.status().ToString() << " count=" << count << " free=" << free.ToListString();
          continue;
        }
        EXPECT_EQ(got->Count(), count);
        EXPECT_TRUE(got->IsSubsetOf(free));
        if (parsed.full_pcpus_only) {
          EXPECT_EQ(ComputeMetrics(m.index, *got).partial_cores, 0) << got->ToListString();
        }
      }
    }
  }
  EXPECT_EQ(topologies, 25);
}

// --- options and invariants on synthetic machines -------------------------------------------

const testing::SyntheticShape kTwoSocketSmt2 = {2, 1, 8, 2, 2};  // 32 CPUs, 4 L3 groups of 8

TEST(AllocatorTest, ErrorsSayWhy) {
  const Machine m = Synthetic(kTwoSocketSmt2);
  EXPECT_THAT(Take(m, CpuSet::Range(0, 3), 5),
              StatusIs(StatusCode::kResourceExhausted,
                       "not enough cpus available to satisfy request: requested=5, available=4"));
  EXPECT_THAT(Take(m, m.topology.online, 3, {{"full-pcpus-only", "true"}}),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("SMTAlignmentError{RequestedCPUs: 3, CpusPerCore: 2}")));
  // Eight free CPUs, but only in halves of cores.
  EXPECT_THAT(Take(m, CpuSet::Range(0, 7), 4, {{"full-pcpus-only", "true"}}),
              StatusIs(StatusCode::kResourceExhausted, HasSubstr("whole cores")));
  EXPECT_THAT(Take(m, CpuSet({0, 99}), 1), StatusIs(StatusCode::kInvalidArgument, HasSubstr("99")));
  EXPECT_THAT(Take(m, m.topology.online, -1), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(Take(m, m.topology.online, 1, {}, {}, {5}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("NUMA node 5")));
  EXPECT_THAT(Take(m, m.topology.online, 0), IsOkAndHolds(CpuSet()));
}

TEST(AllocatorTest, NeverChoosesReservedCpus) {
  const Machine m = Synthetic(kTwoSocketSmt2);
  const CpuSet reserved = CpuSet::Range(0, 15);
  Result<CpuSet> got = Take(m, m.topology.online, 16, {}, reserved);
  ASSERT_THAT(got, IsOk());
  EXPECT_FALSE(got->Intersects(reserved));
  EXPECT_THAT(Take(m, m.topology.online, 17, {}, reserved),
              StatusIs(StatusCode::kResourceExhausted));
}

TEST(AllocatorTest, SmtFourWholeCoresAndSmallestSpans) {
  const Machine m = Synthetic({2, 2, 4, 4, 1});  // SMT4, 4 NUMA nodes of 16 CPUs
  Result<CpuSet> got = Take(m, m.topology.online, 8, {{"full-pcpus-only", "true"}});
  ASSERT_THAT(got, IsOk());
  const PlacementMetrics metrics = ComputeMetrics(m.index, *got);
  EXPECT_EQ(metrics.QualityKey(), std::make_tuple(1, 1, 1, 0));
  EXPECT_EQ(metrics.cores_touched, 2);
  EXPECT_THAT(Take(m, m.topology.online, 6, {{"full-pcpus-only", "true"}}),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("CpusPerCore: 4")));
}

TEST(AllocatorTest, OddRequestReusesAStrandedSibling) {
  const Machine m = Synthetic(kTwoSocketSmt2);
  // CPU 16 (sibling of 0) is busy: CPU 0 is a stranded thread in socket 0.
  const CpuSet available = m.topology.online - CpuSet({16});
  Result<CpuSet> got = Take(m, available, 3);
  ASSERT_THAT(got, IsOk());
  EXPECT_TRUE(got->Contains(0)) << got->ToListString();
  EXPECT_EQ(ComputeMetrics(m.index, *got).partial_cores, 1);
}

TEST(AllocatorTest, NumaHintIsPreferredAndWidenedByAlignBySocket) {
  const Machine m = Synthetic({2, 2, 4, 2, 1});  // 2 sockets x 2 NUMA x 4 cores x SMT2
  Result<CpuSet> in_hint = Take(m, m.topology.online, 4, {}, {}, {3});
  ASSERT_THAT(in_hint, IsOk());
  EXPECT_TRUE(in_hint->IsSubsetOf(m.topology.numa_nodes[3].cpus)) << in_hint->ToListString();
  // 12 CPUs do not fit NUMA 2 (8 CPUs); with align-by-socket they fit its socket.
  Result<CpuSet> socket = Take(m, m.topology.online, 12, {{"align-by-socket", "true"}}, {}, {2});
  ASSERT_THAT(socket, IsOk());
  EXPECT_TRUE(socket->IsSubsetOf(m.topology.packages[1].cpus)) << socket->ToListString();
  // Without it: all of NUMA 2, the rest elsewhere (kubelet's allocateCPUs).
  Result<CpuSet> spill = Take(m, m.topology.online, 12, {}, {}, {2});
  ASSERT_THAT(spill, IsOk());
  EXPECT_TRUE(m.topology.numa_nodes[2].cpus.IsSubsetOf(*spill)) << spill->ToListString();
  EXPECT_EQ(spill->Count(), 12);
}

TEST(AllocatorTest, DistributeAcrossNumaSplitsEvenly) {
  const Machine m = Synthetic({2, 2, 4, 2, 1});
  Result<CpuSet> got = Take(
      m, m.topology.online, 12,
      {{"distribute-cpus-across-numa", "true"}, {"prefer-align-cpus-by-uncorecache", "false"}});
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ((*got & m.topology.numa_nodes[0].cpus).Count(), 6);
  EXPECT_EQ((*got & m.topology.numa_nodes[1].cpus).Count(), 6);
  EXPECT_EQ(ComputeMetrics(m.index, *got).socket_span, 1);
}

TEST(AllocatorTest, DistributeAcrossSixteenNumaNodesStaysEvenAndCompact) {
  const Machine m = Synthetic({4, 4, 8, 2, 2});  // 16 NUMA nodes of 16 CPUs
  Result<CpuSet> got = Take(
      m, m.topology.online, 100,
      {{"distribute-cpus-across-numa", "true"}, {"prefer-align-cpus-by-uncorecache", "false"}});
  ASSERT_THAT(got, IsOk());
  const PlacementMetrics metrics = ComputeMetrics(m.index, *got);
  EXPECT_EQ(metrics.numa_span, 7);    // ceil(100 / 16)
  EXPECT_EQ(metrics.socket_span, 2);  // 7 nodes need two 4-node sockets
  for (const NumaNode& n : m.topology.numa_nodes) {
    const int in_node = (n.cpus & *got).Count();
    EXPECT_TRUE(in_node == 0 || in_node == 14 || in_node == 15)
        << "node " << n.id << ": " << in_node;
  }
}

TEST(AllocatorTest, DistributeAcrossCoresUsesOneThreadPerCoreFirst) {
  const Machine m = Synthetic(kTwoSocketSmt2);
  Result<CpuSet> got = Take(m, m.topology.online, 4, {{"distribute-cpus-across-cores", "true"}});
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(ComputeMetrics(m.index, *got).cores_touched, 4);
  EXPECT_EQ(ComputeMetrics(m.index, *got).l3_span, 1);
}

// Numbered core by core (POWER, the KNL fixture): CPU-id order keeps threads of one core
// together, and that order is what kubelet's spread takes. Both orders are scored and the one
// with fewer partial cores wins, so we never leave more partial cores than kubelet would; on
// Linux x86 numbering (test above) both orders are one thread per core.
TEST(AllocatorTest, DistributeAcrossCoresNeverLeavesMorePartialCoresThanCpuIdOrder) {
  std::vector<CpuRecord> records;
  for (int core = 0; core < 8; ++core) {
    for (int t = 0; t < 4; ++t)
      records.push_back({core * 4 + t, core, 0, 0, 0, CoreType::kStandard});
  }
  Result<CpuTopology> topo = BuildTopologyFromRecords(records);
  ASSERT_THAT(topo, IsOk());
  const Machine m = FromTopology(*topo);
  CpuSet available = m.topology.online;
  available.Clear(0);  // core 0 partly used: id order starts with its three free threads
  Result<CpuSet> got = Take(m, available, 6, {{"distribute-cpus-across-cores", "true"}});
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->ToListString(), "1-6");
  EXPECT_EQ(ComputeMetrics(m.index, *got).partial_cores, 2);
}

TEST(AllocatorTest, DeterministicAndIndependentOfRecordOrder) {
  std::vector<CpuRecord> records = testing::SyntheticRecords({2, 2, 12, 2, 3});
  Result<CpuTopology> a = BuildTopologyFromRecords(records);
  std::shuffle(records.begin(), records.end(), std::mt19937(7));
  Result<CpuTopology> b = BuildTopologyFromRecords(records);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  const Machine ma = FromTopology(*a), mb = FromTopology(*b);
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    CpuSet available;
    for (int cpu : a->online) {
      if (rng() % 3 != 0) available.Set(cpu);
    }
    const int count = 1 + static_cast<int>(rng() % 20);
    Result<CpuSet> x = Take(ma, available, count), y = Take(mb, available, count),
                   z = Take(ma, available, count);
    ASSERT_EQ(x.ok(), y.ok());
    if (!x.ok()) continue;
    EXPECT_EQ(*x, *y);
    EXPECT_EQ(*x, *z);
    EXPECT_EQ(x->Count(), count);
    EXPECT_TRUE(x->IsSubsetOf(available));
  }
}

}  // namespace
}  // namespace dracpu::allocator
