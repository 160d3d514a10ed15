// The text map: the 2-socket 96-CPU node in 80 columns (the whole drawing, as operators see it),
// every corpus machine drawn within 80 columns with one glyph per CPU, a 1024-CPU node summarised
// legibly, colour only when asked, ASCII boxes.
#include "shm-schema/map_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/map_test_util.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::shm {
namespace {

using ::testing::HasSubstr;
using testing::Lines;
using testing::MaxColumns;
using testing::NodeSnapshot;
using ::testing::Not;
using testing::ThreadGlyphCounts;

// 2 sockets x 24 cores x 2 threads: CPU c and c + 48 are siblings.
CpuTopology TwoSockets96() {
  return dracpu::testing::SyntheticTopology(
      {.sockets = 2, .numa_per_socket = 1, .cores_per_numa = 24, .threads_per_core = 2});
}

Snapshot TwoClaims96(const CpuTopology& topo) {
  return NodeSnapshot(topo, CpuSet{23, 71},
                      {{"uid-a", "numa0-claim", CpuSet{0, 1, 48, 49}, "trainer"},
                       {"uid-b", "fullcore-claim", CpuSet{24, 25, 72, 73}, ""}});
}

TEST(MapText, TwoSocketNinetySixCpusIn80Columns) {
  const CpuTopology topo = TwoSockets96();
  const Snapshot snap = TwoClaims96(topo);
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  const std::string text = RenderMapText(map, {});
  EXPECT_EQ(text,
            "node node-a · 96 CPUs online · generation 42\n"
            "┌─ socket 0 · NUMA node 0 · L3 0 ─────────────────────────────────────────┐\n"
            "│ 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15 16 17 18 19 20 21 22 23 │\n"
            "│ AA AA .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. == │\n"
            "└─────────────────────────────────────────────────────────────────────────┘\n"
            "┌─ socket 1 · NUMA node 1 · L3 1 ─────────────────────────────────────────┐\n"
            "│ 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 │\n"
            "│ BB BB .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. .. │\n"
            "└─────────────────────────────────────────────────────────────────────────┘\n"
            "A  claim team/numa0-claim  4 CPUs: 0-1,48-49  prepared · pod team/trainer/main\n"
            "B  claim team/fullcore-claim  4 CPUs: 24-25,72-73  prepared · no container yet\n"
            "=  reserved  2 CPUs: 23,71\n"
            "     reservedCPUs: never claimed, not in the shared pool (strict)\n"
            ".  shared pool  86 CPUs: 2-22,26-47,50-70,74-95  0 shared containers\n"
            "(each cell: the core's lowest CPU above one glyph per thread, in CPU order)\n");
  EXPECT_LE(MaxColumns(text), 80);
}

TEST(MapText, EveryCorpusMachineFits80ColumnsWithOneGlyphPerCpu) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  for (const auto& m : dracpu::testing::CorpusMachines(shared)) {
    SCOPED_TRACE(m);
    Result<CpuTopology> topo = testing::CorpusTopology(shared, m);
    ASSERT_TRUE(topo.ok()) << topo.status().ToString();
    const CpuSet claim = topo->cores.front().cpus;
    const Snapshot snap = NodeSnapshot(*topo, {}, {{"uid-a", "a", claim, "p"}});
    const NodeMap map = BuildNodeMap(*topo, &snap, nullptr);
    TextMapOptions threads;
    threads.view = MapView::kThreads;
    const std::string text = RenderMapText(map, threads);
    EXPECT_LE(MaxColumns(text), 80) << text;
    // Every CPU drawn (online ones in boxes, the others outside) is exactly one glyph cell.
    std::map<char, int> want;
    for (const auto& o : map.owners) want[o.glyph] += o.cpus.Count();
    EXPECT_EQ(ThreadGlyphCounts(text), want) << text;
    EXPECT_EQ(want['A'], claim.Count());
    TextMapOptions cores;
    cores.view = MapView::kCores;
    EXPECT_LE(MaxColumns(RenderMapText(map, cores)), 80);
  }
}

TEST(MapText, A1024CpuNodeIsSummarisedPerGroup) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology(
      {.sockets = 4, .numa_per_socket = 2, .cores_per_numa = 64, .threads_per_core = 2});
  std::vector<testing::TestClaimSpec> claims;
  for (int i = 0; i < 40; ++i) {
    claims.push_back({"uid-" + std::to_string(100 + i), "c" + std::to_string(i),
                      CpuSet{12 * i, 12 * i + 512}, ""});
  }
  const Snapshot snap = NodeSnapshot(topo, {}, claims);
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  EXPECT_EQ(ResolveView(map, MapView::kAuto), MapView::kCores);
  const std::string text = RenderMapText(map, {});
  EXPECT_LE(MaxColumns(text), 80) << text;
  // The boxes: 4 sockets of 2 nodes, 3 lines a node (then one legend line per glyph).
  const size_t legend = text.find("\nA  claim");
  ASSERT_NE(legend, std::string::npos);
  EXPECT_LE(Lines(text.substr(0, legend + 1)), 40) << text;
  // One strip of 64 core glyphs per NUMA node, with its owners' CPU counts.
  // Each socket a table of its NUMA nodes: a glyph per core (wrapped), the CPUs per owner.
  EXPECT_THAT(text, HasSubstr("─ socket 0 · 128 cores ─"));
  EXPECT_THAT(text, HasSubstr("│ NUMA node 0 · L3 0 A...........B...........C...........D."));
  EXPECT_THAT(text, HasSubstr("│                    A 2  B 2  C 2  D 2  E 2  F 2  . 116 "));
  EXPECT_THAT(text, HasSubstr("│                    6 2  7 2  8 2  9 2  * 4  . 116 "));
  EXPECT_THAT(text, HasSubstr("*  4 more claims (no glyph)  8 CPUs: 432,444,456,468,944,956,"));
  EXPECT_THAT(text, HasSubstr(".  shared pool  944 CPUs"));
}

TEST(MapText, TablesOfGroupsInTheCoresView) {
  // 2 sockets x 4 NUMA nodes x 8 cores, one L3 per node: each socket a table of its nodes.
  const CpuTopology topo = dracpu::testing::SyntheticTopology(
      {.sockets = 2, .numa_per_socket = 4, .cores_per_numa = 8, .threads_per_core = 2});
  const Snapshot snap = NodeSnapshot(topo, {}, {{"uid-a", "a", CpuSet{8, 9, 72, 73}, ""}});
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  TextMapOptions cores;
  cores.view = MapView::kCores;
  const std::string text = RenderMapText(map, cores);
  EXPECT_THAT(text, HasSubstr("│ NUMA node 0 · L3 0 ........  . 16 "));
  EXPECT_THAT(text, HasSubstr("│ NUMA node 1 · L3 1 AA......  A 4  . 12 "));
  EXPECT_LE(MaxColumns(text), 80);
}

TEST(MapText, ColourOnlyWhenAsked) {
  const CpuTopology topo = TwoSockets96();
  const Snapshot snap = TwoClaims96(topo);
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  EXPECT_THAT(RenderMapText(map, {}), Not(HasSubstr("\x1b[")));
  TextMapOptions color;
  color.color = true;
  const std::string text = RenderMapText(map, color);
  // Claim A's threads on a blue background, the shared pool green, the legend glyph coloured.
  EXPECT_THAT(text, HasSubstr("\x1b[97;44mAA"));
  EXPECT_THAT(text, HasSubstr("\x1b[32m.."));
  EXPECT_THAT(text, HasSubstr("\x1b[97;44mA\x1b[0m  claim team/numa0-claim"));
}

TEST(MapText, AsciiBoxesAndNarrowTerminals) {
  const CpuTopology topo = TwoSockets96();
  const Snapshot snap = TwoClaims96(topo);
  const NodeMap map = BuildNodeMap(topo, &snap, nullptr);
  TextMapOptions o;
  o.ascii = true;
  o.width = 40;
  const std::string text = RenderMapText(map, o);
  for (char c : text) ASSERT_EQ(static_cast<unsigned char>(c) & 0x80, 0) << text;
  EXPECT_THAT(text, HasSubstr("+- socket 0 / NUMA node 0 / L3 0 ------+"));
  EXPECT_LE(MaxColumns(text), 40) << text;
  // Wrapped, still one glyph per CPU.
  std::map<char, int> want;
  for (const auto& owner : map.owners) want[owner.glyph] = owner.cpus.Count();
  EXPECT_EQ(ThreadGlyphCounts(text), want);
}

}  // namespace
}  // namespace dracpu::shm
