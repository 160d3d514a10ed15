// The node map's model: owners and nesting on every recorded corpus machine (extracted from
// ../shared/sysfs-corpus at test time, skipped when absent) and on synthetic nodes up to 1024
// CPUs; stable claim glyphs; conflicts, segment/topology disagreements and no segment at all.
#include "shm-schema/node_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "tests/testing/map_test_util.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::shm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::NodeSnapshot;
using testing::TestClaimSpec;

void ForEachBox(const MapBox& b, const std::function<void(const MapBox&)>& f) {
  f(b);
  for (const auto& k : b.children) ForEachBox(k, f);
}

// Owner use of each CPU drawn (in boxes or outside), and checks that each is drawn once.
std::map<int, CpuUse> DrawnUses(const NodeMap& map) {
  std::map<int, CpuUse> uses;
  auto add = [&](const MapThread& t) {
    ASSERT_GE(t.owner, 0);
    ASSERT_LT(t.owner, static_cast<int>(map.owners.size()));
    EXPECT_TRUE(uses.emplace(t.cpu, map.owners[static_cast<size_t>(t.owner)].use).second)
        << "CPU " << t.cpu << " drawn twice";
  };
  for (const auto& s : map.sockets) {
    ForEachBox(s, [&](const MapBox& b) {
      EXPECT_TRUE(b.children.empty() || b.cores.empty()) << "a box with both cores and boxes";
      int threads = 0;
      for (const auto& c : b.cores) {
        for (const auto& t : c.threads) {
          add(t);
          ++threads;
        }
      }
      int counted = 0;
      for (const auto& [owner, n] : b.owner_cpus) counted += n;
      if (b.children.empty()) {
        EXPECT_EQ(counted, threads);
      }
      EXPECT_FALSE(b.title.empty());
    });
  }
  for (const auto& t : map.outside) add(t);
  return uses;
}

// A snapshot with two claims (the first two cores, and the last core), CPU of the second core
// reserved, and the shared pool the agents would publish.
Snapshot TwoClaims(const CpuTopology& topo, TestClaimSpec* a, TestClaimSpec* b, CpuSet* reserved) {
  *a = {"uid-a", "first-cores", topo.cores[0].cpus, "trainer"};
  *b = {"uid-b", "last-core", topo.cores.back().cpus, ""};
  if (topo.cores.size() > 2) *reserved = topo.cores[1].cpus;
  std::vector<TestClaimSpec> claims = {*a};
  if (topo.cores.size() > 1 && !(topo.cores.back().cpus == topo.cores[0].cpus)) {
    claims.push_back(*b);
  }
  return NodeSnapshot(topo, *reserved, claims);
}

void CheckMachine(const CpuTopology& topo, const std::string& name) {
  SCOPED_TRACE(name);
  TestClaimSpec a, b;
  CpuSet reserved;
  const Snapshot snap = TwoClaims(topo, &a, &b, &reserved);
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  const std::map<int, CpuUse> uses = DrawnUses(map);
  EXPECT_EQ(map.online_cpus, topo.online.Count());
  for (int cpu : topo.online) {
    ASSERT_TRUE(uses.count(cpu)) << "online CPU " << cpu << " not drawn";
    CpuUse want = CpuUse::kShared;
    if (a.cpus.Contains(cpu) || (snap.claims.size() > 1 && b.cpus.Contains(cpu))) {
      want = CpuUse::kClaim;
    } else if (reserved.Contains(cpu)) {
      want = CpuUse::kReserved;
    }
    EXPECT_EQ(uses.at(cpu), want) << "CPU " << cpu;
  }
  for (const auto& [cpu, use] : uses) {
    if (!topo.online.Contains(cpu)) {
      EXPECT_EQ(use, CpuUse::kOffline) << "CPU " << cpu;
    }
  }
  // Legend: the claims first, each with its glyph and CPUs, then the other owners in use order.
  ASSERT_GE(map.owners.size(), snap.claims.size());
  EXPECT_EQ(map.owners[0].glyph, 'A');
  EXPECT_EQ(map.owners[0].cpus, a.cpus);
  EXPECT_EQ(map.owners[0].label, "claim team/first-cores");
  EXPECT_THAT(map.owners[0].detail, HasSubstr("pod team/trainer/main"));
  if (snap.claims.size() > 1) {
    EXPECT_EQ(map.owners[1].glyph, 'B');
    EXPECT_THAT(map.owners[1].detail, HasSubstr("no container yet"));
  }
  for (size_t i = 1; i < map.owners.size(); ++i) {
    EXPECT_LE(static_cast<int>(map.owners[i - 1].use), static_cast<int>(map.owners[i].use));
  }
  // Each socket box holds exactly its package's CPUs that are online.
  CpuSet boxed;
  for (const auto& s : map.sockets) boxed |= s.cpus;
  EXPECT_EQ(boxed, topo.online);
}

TEST(NodeMapCorpus, EveryMachineDrawsEveryCpuWithItsOwner) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  const std::vector<std::string> machines = dracpu::testing::CorpusMachines(shared);
  ASSERT_EQ(machines.size(), 27u);
  for (const auto& m : machines) {
    Result<CpuTopology> topo = testing::CorpusTopology(shared, m);
    ASSERT_TRUE(topo.ok()) << m << ": " << topo.status().ToString();
    CheckMachine(*topo, m);
  }
}

// Nesting on the machines whose shapes break naive rules.
struct ShapeCase {
  const char* machine;
  std::vector<std::string> first_titles;  // titles down the first boxes, outermost first
  int sockets;
};

TEST(NodeMapCorpus, NestingFollowsTheMachine) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  const ShapeCase kCases[] = {
      // Intel SNC2: one L3 per socket shared by two NUMA nodes.
      {"intel-cascadelake-2s-snc2-ht", {"socket 0", "NUMA node 0 · L3 0 (part)"}, 2},
      // EPYC Naples: 4 NUMA nodes per socket, 2 L3 (CCX) per node.
      {"amd-epyc7451-2s-8numa-16ccx", {"socket 0", "NUMA node 0", "L3 0"}, 2},
      // Node 0 offline: the online CPUs of socket 0 are in no NUMA node.
      {"intel-haswell-2s-offline-cpu0-node0", {"socket 0 · no NUMA node · L3 0"}, 2},
      // POWER7: an L3 per core adds nothing, so no L3 boxes.
      {"ibm-power7-8numa-smt4", {"socket 0", "NUMA node 0"}, 1},
      // No cache and no node directories at all.
      {"arm-armv7-dualcore-minimal", {"socket 3 · NUMA node 0"}, 1},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.machine);
    Result<CpuTopology> topo = testing::CorpusTopology(shared, c.machine);
    ASSERT_TRUE(topo.ok()) << topo.status().ToString();
    const Snapshot snap = NodeSnapshot(*topo, {}, {});
    const NodeMap map = BuildNodeMap(*topo, &snap, nullptr);
    EXPECT_EQ(static_cast<int>(map.sockets.size()), c.sockets);
    std::vector<std::string> titles;
    const MapBox* b = &map.sockets.front();
    for (;;) {
      std::string t;
      for (const auto& part : b->title) t += (t.empty() ? "" : " · ") + part;
      titles.push_back(t);
      if (b->children.empty()) break;
      b = &b->children.front();
    }
    EXPECT_EQ(titles, c.first_titles);
  }
}

TEST(NodeMapCorpus, OfflineCpusAreDrawnOutsideTheBoxes) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  Result<CpuTopology> topo = testing::CorpusTopology(shared, "intel-haswell-2s-offline-cpu0-node0");
  ASSERT_TRUE(topo.ok()) << topo.status().ToString();
  const Snapshot snap = NodeSnapshot(*topo, {}, {});
  const NodeMap map = BuildNodeMap(*topo, &snap, nullptr);
  std::vector<int> outside;
  for (const auto& t : map.outside) {
    outside.push_back(t.cpu);
    EXPECT_EQ(map.owners[static_cast<size_t>(t.owner)].use, CpuUse::kOffline);
  }
  EXPECT_THAT(outside, ElementsAre(0, 1, 2, 3, 21, 22, 23));
}

TEST(NodeMapSynthetic, A1024CpuNodeNestsSocketsNumaAndCores) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology(
      {.sockets = 4, .numa_per_socket = 2, .cores_per_numa = 64, .threads_per_core = 2});
  ASSERT_EQ(topo.online.Count(), 1024);
  std::vector<TestClaimSpec> claims;
  for (int i = 0; i < 40; ++i) {
    // Claim i holds core 12i and its sibling (40 claims: more than the 36 glyphs).
    claims.push_back({"uid-" + std::to_string(100 + i), "c" + std::to_string(i),
                      CpuSet{12 * i, 12 * i + 512}, i % 2 ? "pod-" + std::to_string(i) : ""});
  }
  const Snapshot snap = NodeSnapshot(topo, CpuSet{1023}, claims);
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  ASSERT_EQ(map.sockets.size(), 4u);
  for (const auto& s : map.sockets) {
    ASSERT_EQ(s.children.size(), 2u);  // NUMA node · L3 merged (one L3 per node)
    EXPECT_EQ(s.core_count, 128);
    EXPECT_EQ(s.children[0].title.size(), 2u);
    EXPECT_EQ(s.children[0].cores.size(), 64u);
  }
  const std::map<int, CpuUse> uses = DrawnUses(map);
  EXPECT_EQ(uses.size(), 1024u);
  int glyphed = 0;
  int overflow = 0;
  for (const auto& o : map.owners) {
    if (o.use != CpuUse::kClaim) continue;
    (o.glyph == ClaimGlyphs::kOverflow ? overflow : glyphed)++;
    EXPECT_EQ(o.cpus.Count(), 2);
  }
  EXPECT_EQ(glyphed, 36);
  EXPECT_EQ(overflow, 4);
  EXPECT_EQ(uses.at(1023), CpuUse::kReserved);
  EXPECT_EQ(uses.at(1), CpuUse::kShared);
}

TEST(NodeMap, ConflictsAreMarkedAndNoted) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology({});
  Snapshot snap = NodeSnapshot(topo, {}, {{"u1", "one", CpuSet{0, 4}, ""}});
  snap.shared_pool.cpus.Set(0);  // the nri-agent still runs shared containers on CPU 0
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  const std::map<int, CpuUse> uses = DrawnUses(map);
  EXPECT_EQ(uses.at(0), CpuUse::kConflict);
  EXPECT_EQ(uses.at(4), CpuUse::kClaim);
  ASSERT_FALSE(map.notes.empty());
  EXPECT_THAT(map.notes.back(), HasSubstr("1 CPU(s) have two owners"));
}

TEST(NodeMap, DisagreementWithTheSegmentIsNoted) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology({});
  Snapshot snap = NodeSnapshot(topo, {}, {{"u1", "one", CpuSet{0, 4}, ""}});
  snap.topology.online = CpuSet::Range(0, 11);  // the dra-agent saw another machine
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  EXPECT_THAT(map.notes, ::testing::Contains(HasSubstr(
                             "the segment's online CPUs (0-11) differ from the sysfs topology's "
                             "(0-7)")));
  std::vector<int> outside;
  for (const auto& t : map.outside) outside.push_back(t.cpu);
  EXPECT_THAT(outside, ElementsAre(8, 9, 10, 11));
}

TEST(NodeMap, WithoutASegmentOwnersAreUnknown) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology({});
  const NodeMap map = BuildNodeMap(topo, nullptr, nullptr);
  EXPECT_FALSE(map.have_segment);
  ASSERT_EQ(map.owners.size(), 1u);
  EXPECT_EQ(map.owners[0].use, CpuUse::kUnknown);
  EXPECT_EQ(map.owners[0].cpus, topo.online);
  EXPECT_THAT(map.notes, ElementsAre("no segment: CPU owners are unknown"));
}

TEST(NodeMap, UnpublishedPoolIsImpliedFromTheClaims) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology({});
  Snapshot snap = NodeSnapshot(topo, {}, {{"u1", "one", CpuSet{1, 5}, ""}});
  snap.shared_pool = {};
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  const std::map<int, CpuUse> uses = DrawnUses(map);
  EXPECT_EQ(uses.at(0), CpuUse::kShared);
  EXPECT_EQ(uses.at(1), CpuUse::kClaim);
  EXPECT_THAT(map.notes, ::testing::Contains(HasSubstr("has not published a shared pool")));
}

TEST(ClaimGlyphs, ClaimsKeepTheirGlyphAcrossRedraws) {
  ClaimGlyphs g;
  EXPECT_THAT(g.Assign({"a", "b", "c"}), ElementsAre('A', 'B', 'C'));
  // "a" went away: "b" and "c" keep theirs, the newcomer takes the freed glyph.
  EXPECT_THAT(g.Assign({"b", "c", "d"}), ElementsAre('B', 'C', 'A'));
  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i) many.push_back("u" + std::to_string(i));
  const std::vector<char> glyphs = g.Assign(many);
  EXPECT_EQ(glyphs[35], '9');
  EXPECT_EQ(glyphs[36], ClaimGlyphs::kOverflow);
}

}  // namespace
}  // namespace dracpu::shm
