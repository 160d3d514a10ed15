#include "common/sysfs_overlay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/topology_discovery.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace dracpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::SysfsFixture;

std::unique_ptr<SysfsFixture> NewFixture() {
  auto f = SysfsFixture::Create();
  EXPECT_THAT(f, IsOk());
  return std::move(f).value();
}

std::unique_ptr<FileSystem> Overlaid(const SysfsFixture& f, std::string_view yaml) {
  auto overlay = ParseSysfsOverlay(yaml, "overlay.yaml");
  EXPECT_THAT(overlay, IsOk());
  return NewOverlayFileSystem(f.Fs().value(), std::move(overlay).value());
}

std::vector<std::string> Names(const std::vector<DirEntry>& entries) {
  std::vector<std::string> out;
  for (const DirEntry& e : entries) out.push_back(e.name);
  return out;
}

TEST(SysfsOverlayParse, KeysBecomeRootRelativePaths) {
  auto o = ParseSysfsOverlay(
      "/sys/devices/system/cpu/online: \"0-3\\n\"\n/sys/devices/system/cpu/cpu0/node0: \"\"\n",
      "o.yaml");
  ASSERT_THAT(o, IsOk());
  EXPECT_EQ(o->files.at("sys/devices/system/cpu/online"), "0-3\n");
  EXPECT_EQ(o->files.at("sys/devices/system/cpu/cpu0/node0"), "");
  EXPECT_THAT(ParseSysfsOverlay("", "o.yaml"), IsOk());
}

TEST(SysfsOverlayParse, EveryProblemIsReportedWithItsLine) {
  const std::string bad =
      "/proc/cpuinfo: x\n"                                   // 1: not beneath /sys
      "/sys/devices//system: x\n"                            // 2: not clean
      "/sys/devices/../x: x\n"                               // 3: not clean
      "/sys/a/b: [1, 2]\n"                                   // 4: not a string
      "/sys/c: x\n"                                          // 5: file ...
      "/sys/c/d: x\n"                                        // 6: ... and directory
      "/sys/devices/system/cpu/cpu1/node0: \"\"\n"           // 7
      "/sys/devices/system/cpu/cpu1/node1/cpulist: \"1\"\n"  // 8: second node of cpu1
      "/sys/e/: x\n";                                        // 9: trailing slash
  auto o = ParseSysfsOverlay(bad, "o.yaml");
  ASSERT_THAT(o, StatusIs(StatusCode::kInvalidArgument));
  const std::string m = o.status().message();
  EXPECT_THAT(m, HasSubstr("o.yaml:1: key \"/proc/cpuinfo\": must be beneath /sys/"));
  EXPECT_THAT(m, HasSubstr("o.yaml:2: key \"/sys/devices//system\": is not a clean path"));
  EXPECT_THAT(m, HasSubstr("o.yaml:3:"));
  EXPECT_THAT(m, HasSubstr("o.yaml:4: key \"/sys/a/b\": the value must be a string"));
  EXPECT_THAT(m, HasSubstr("/sys/c is both a file and a directory"));
  EXPECT_THAT(m, HasSubstr("two NUMA nodes, node0 and node1"));
  EXPECT_THAT(m, HasSubstr("o.yaml:9:"));
  EXPECT_THAT(
      ParseSysfsOverlay("/sys/x: a\n/sys/x: b\n", "o.yaml"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("o.yaml:2: key \"/sys/x\": duplicate")));
  EXPECT_THAT(ParseSysfsOverlay("- a\n", "o.yaml"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("must be a mapping")));
  EXPECT_THAT(ParseSysfsOverlay("a: [\n", "o.yaml"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("o.yaml: YAML")));
}

TEST(SysfsOverlay, ReadsOverlaidFilesAndThroughToTheBase) {
  auto f = NewFixture();
  f->File("sys/devices/system/cpu/online", "0-7\n")
      .File("sys/devices/system/cpu/possible", "0-7\n");
  f->File("sys/devices/system/cpu/cpu0/topology/core_id", "0\n");
  auto fs = Overlaid(*f,
                     "/sys/devices/system/cpu/online: \"0-3\\n\"\n"
                     "/sys/devices/system/cpu/cpu0/extra/file: \"x\"\n");
  EXPECT_THAT(fs->ReadFile("sys/devices/system/cpu/online"), IsOkAndHolds("0-3\n"));
  EXPECT_THAT(fs->ReadFile("/sys/devices/system/cpu/online"), IsOkAndHolds("0-3\n"));
  EXPECT_THAT(fs->ReadFile("sys/devices/system/cpu/possible"), IsOkAndHolds("0-7\n"));
  EXPECT_THAT(fs->ReadFile("sys/devices/system/cpu/online", 2),
              StatusIs(StatusCode::kResourceExhausted));
  EXPECT_TRUE(fs->IsDirectory("sys/devices/system/cpu/cpu0/extra"));
  EXPECT_FALSE(fs->IsDirectory("sys/devices/system/cpu/cpu0/extra/file"));
  EXPECT_TRUE(fs->Exists("sys/devices/system/cpu/cpu0/extra/file"));
  EXPECT_THAT(fs->ReadFile("sys/devices/system/cpu/cpu0/extra"),
              StatusIs(StatusCode::kInvalidArgument));
  auto listed = fs->ListDirectory("sys/devices/system/cpu/cpu0");
  ASSERT_THAT(listed, IsOk());
  EXPECT_THAT(Names(*listed), ElementsAre("extra", "topology"));
  EXPECT_THAT(fs->ReadLink("sys/devices/system/cpu/online"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a symbolic link")));
}

TEST(SysfsOverlay, AnOverlaidNodeEntryHidesTheHostsNodeOfThatCpu) {
  auto f = NewFixture();
  f->Symlink("sys/devices/system/cpu/cpu0/node1", "../../node/node1");
  f->File("sys/devices/system/cpu/cpu0/online", "1\n");
  auto fs = Overlaid(*f, "/sys/devices/system/cpu/cpu0/node0: \"\"\n");
  auto listed = fs->ListDirectory("sys/devices/system/cpu/cpu0");
  ASSERT_THAT(listed, IsOk());
  EXPECT_THAT(Names(*listed), ElementsAre("node0", "online"));
  EXPECT_FALSE(fs->Exists("sys/devices/system/cpu/cpu0/node1"));
}

TEST(SysfsOverlay, ReplacesNodeAndCacheDirectoriesAndHidesSiblingListsOfRewrittenCores) {
  auto f = NewFixture();
  f->File("sys/devices/system/node/online", "0-3\n");
  f->File("sys/devices/system/node/node3/cpulist", "6-7\n");
  f->File("sys/devices/system/cpu/cpu0/cache/index2/level", "2\n");
  f->File("sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0-1\n");
  f->File("sys/devices/system/cpu/cpu0/topology/die_id", "0\n");
  f->File("sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "0-1\n");
  auto fs = Overlaid(*f,
                     "/sys/devices/system/node/node0/cpulist: \"0-1\\n\"\n"
                     "/sys/devices/system/cpu/cpu0/cache/index3/level: \"3\\n\"\n"
                     "/sys/devices/system/cpu/cpu0/topology/core_id: \"0\\n\"\n");
  auto nodes = fs->ListDirectory("sys/devices/system/node");
  ASSERT_THAT(nodes, IsOk());
  EXPECT_THAT(Names(*nodes), ElementsAre("node0"));
  EXPECT_THAT(fs->ReadFile("sys/devices/system/node/online"), StatusIs(StatusCode::kNotFound));
  EXPECT_FALSE(fs->IsDirectory("sys/devices/system/node/node3"));
  auto cache = fs->ListDirectory("sys/devices/system/cpu/cpu0/cache");
  ASSERT_THAT(cache, IsOk());
  EXPECT_THAT(Names(*cache), ElementsAre("index3"));
  EXPECT_THAT(fs->ReadFile("sys/devices/system/cpu/cpu0/topology/thread_siblings_list"),
              StatusIs(StatusCode::kNotFound));
  EXPECT_THAT(fs->ReadFile("sys/devices/system/cpu/cpu0/topology/die_id"), IsOkAndHolds("0\n"));
  // cpu1's identity is not rewritten: its host files stay.
  EXPECT_THAT(fs->ReadFile("sys/devices/system/cpu/cpu1/topology/thread_siblings_list"),
              IsOkAndHolds("0-1\n"));
}

// The shape of the reference's example overlay (4 CPUs on 2 sockets and 2 NUMA nodes, SMT off,
// one L3 per socket) laid over a host with 8 CPUs, adjacent SMT siblings, 4 nodes and L2s: the
// topology is the overlay's, none of the host's leaks in.
TEST(SysfsOverlay, TheReferenceExampleOverAnotherHostDescribesTheOverlaidMachine) {
  auto f = NewFixture();
  f->CpuFile("online", "0-7\n").CpuFile("present", "0-7\n").CpuFile("possible", "0-7\n");
  for (int cpu = 0; cpu < 8; ++cpu) {
    const std::string pair = cpu % 2 == 0 ? std::to_string(cpu) + "-" + std::to_string(cpu + 1)
                                          : std::to_string(cpu - 1) + "-" + std::to_string(cpu);
    f->Cpu(cpu, {.package = 0, .core_id = cpu / 2, .siblings = pair, .node = cpu / 2});
    f->Cache(cpu, 2, {.level = 2, .shared = pair});
    f->Cache(cpu, 3, {.level = 3, .shared = "0-7", .id = 0});
  }
  for (int node = 0; node < 4; ++node) {
    f->Node(node, std::to_string(2 * node) + "-" + std::to_string(2 * node + 1));
  }
  f->File("sys/devices/system/cpu/smt/control", "on\n");
  std::string yaml =
      "/sys/devices/system/cpu/online: \"0-3\\n\"\n"
      "/sys/devices/system/cpu/smt/control: \"off\\n\"\n"
      "/sys/devices/system/node/node0/cpulist: \"0-1\\n\"\n"
      "/sys/devices/system/node/node1/cpulist: \"2-3\\n\"\n";
  for (int cpu = 0; cpu < 4; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
    const std::string socket = std::to_string(cpu / 2);
    yaml += dir + "/node" + socket + ": \"\"\n";
    yaml += dir + "/topology/physical_package_id: \"" + socket + "\\n\"\n";
    yaml += dir + "/topology/core_id: \"" + std::to_string(cpu % 2) + "\\n\"\n";
    yaml += dir + "/topology/cluster_id: \"0\\n\"\n";
    yaml += dir + "/cache/index3/level: \"3\\n\"\n";
    yaml += dir + "/cache/index3/id: \"" + socket + "\\n\"\n";
    yaml += dir + "/cache/index3/shared_cpu_list: \"" + (cpu < 2 ? "0-1" : "2-3") + "\\n\"\n";
  }
  auto fs = Overlaid(*f, yaml);
  auto topo = DiscoverTopology(*fs);
  ASSERT_THAT(topo, IsOk());
  EXPECT_EQ(topo->online.ToListString(), "0-3");
  EXPECT_FALSE(topo->smt_enabled);
  ASSERT_EQ(topo->packages.size(), 2u);
  EXPECT_EQ(topo->packages[1].cpus.ToListString(), "2-3");
  ASSERT_EQ(topo->numa_nodes.size(), 2u);
  EXPECT_EQ(topo->numa_nodes[0].cpus.ToListString(), "0-1");
  EXPECT_EQ(topo->numa_nodes[1].cpus.ToListString(), "2-3");
  EXPECT_EQ(topo->cores.size(), 4u);  // core_id 0 and 1 in each package, no host siblings
  ASSERT_EQ(topo->l3_caches.size(), 2u);
  EXPECT_EQ(topo->l3_caches[1].cpus.ToListString(), "2-3");
  EXPECT_TRUE(topo->l2_caches.empty());
}

TEST(SysfsOverlay, CpusWithoutSiblingFilesShareACoreByCoreId) {
  auto f = NewFixture();
  auto fs = f->Fs().value();
  std::string yaml = "/sys/devices/system/cpu/online: \"0-3\\n\"\n";
  for (int cpu = 0; cpu < 4; ++cpu) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
    yaml += dir + "/topology/physical_package_id: \"0\\n\"\n";
    yaml += dir + "/topology/core_id: \"" + std::to_string(cpu % 2) + "\\n\"\n";
  }
  auto topo = DiscoverTopology(*Overlaid(*f, yaml));
  ASSERT_THAT(topo, IsOk());
  ASSERT_EQ(topo->cores.size(), 2u);
  EXPECT_EQ(topo->cores[0].cpus.ToListString(), "0,2");
  EXPECT_EQ(topo->cores[1].cpus.ToListString(), "1,3");
}

}  // namespace
}  // namespace dracpu
