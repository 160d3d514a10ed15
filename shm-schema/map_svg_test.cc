// The SVG map: a standalone document with one labelled square per CPU in its owner's colour, a
// legend, escaped text; a 1024-CPU node draws every CPU.
#include "shm-schema/map_svg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/map_test_util.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::shm {
namespace {

using ::testing::HasSubstr;
using testing::NodeSnapshot;
using ::testing::Not;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(MapSvg, OneSquarePerCpuInItsOwnersColour) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology(
      {.sockets = 2, .numa_per_socket = 1, .cores_per_numa = 24, .threads_per_core = 2});
  const Snapshot snap =
      NodeSnapshot(topo, {}, {{"uid-a", "numa0-claim", CpuSet{0, 1, 48, 49}, "trainer"}});
  const std::string svg = RenderMapSvg(BuildNodeMap(topo, &snap, nullptr), {});
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(Count(svg, "<svg "), 1);
  EXPECT_EQ(Count(svg, "<title>CPU "), 96);
  EXPECT_EQ(Count(svg, "<g>"), Count(svg, "</g>"));
  EXPECT_EQ(Count(svg, "<g>"), 48);  // one group per core
  // The claim's colour on its CPUs and in the legend, the shared pool's on the others.
  EXPECT_THAT(svg, HasSubstr("fill=\"#4e79a7\" class=\"cpu\"><title>CPU 48: claim "
                             "team/numa0-claim</title>"));
  EXPECT_THAT(svg, HasSubstr("fill=\"#e8eef5\" class=\"cpu\"><title>CPU 2: shared pool</title>"));
  EXPECT_THAT(svg, HasSubstr("claim team/numa0-claim</tspan>  4 CPUs: 0-1,48-49"));
  EXPECT_THAT(svg, HasSubstr("socket 0 · NUMA node 0 · L3 0 · 24 cores"));
  EXPECT_THAT(svg, Not(HasSubstr("<script")));
}

TEST(MapSvg, TextIsEscaped) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology({});
  Snapshot snap = NodeSnapshot(topo, {}, {{"uid-a", "a<b>&\"c\"", CpuSet{0, 4}, ""}});
  const std::string svg = RenderMapSvg(BuildNodeMap(topo, &snap, nullptr), {});
  EXPECT_THAT(svg, HasSubstr("claim team/a&lt;b&gt;&amp;&quot;c&quot;"));
  EXPECT_THAT(svg, Not(HasSubstr("a<b>")));
}

TEST(MapSvg, A1024CpuNodeDrawsEveryCpu) {
  const CpuTopology topo = dracpu::testing::SyntheticTopology(
      {.sockets = 4, .numa_per_socket = 2, .cores_per_numa = 64, .threads_per_core = 2});
  const Snapshot snap = NodeSnapshot(topo, {}, {{"uid-a", "a", CpuSet{1000, 488}, ""}});
  const std::string svg = RenderMapSvg(BuildNodeMap(topo, &snap, nullptr), {});
  EXPECT_EQ(Count(svg, "<title>CPU "), 1024);
  EXPECT_THAT(svg, HasSubstr(">1000</text>"));
}

}  // namespace
}  // namespace dracpu::shm
