// Unit tests of DiscoverTopology on small trees built by SysfsFixture: one test per quirk of
// ../shared/sysfs-corpus/README.md (the rules are in docs/topology.md), plus malformed files.
#include "common/topology_discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

// CpuSpec/CacheSpec give every member a default, and the tests name only what matters with
// designated initializers; g++ 12's -Wextra still reports the omitted members.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace dracpu {
namespace {

using namespace std::string_literals;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::SysfsFixture;

std::unique_ptr<SysfsFixture> NewFixture() {
  auto f = SysfsFixture::Create();
  EXPECT_THAT(f, IsOk());
  return std::move(f).value();
}

Result<CpuTopology> Discover(const SysfsFixture& f, DiscoveryOptions options = {}) {
  ASSIGN_OR_RETURN(std::unique_ptr<FileSystem> fs, f.Fs());
  return DiscoverTopology(*fs, options);
}

std::vector<std::string> Sets(const std::vector<Core>& cores) {
  std::vector<std::string> out;
  for (const Core& c : cores) out.push_back(c.cpus.ToListString());
  return out;
}
template <typename G>
std::vector<std::string> IdSets(const std::vector<G>& groups) {
  std::vector<std::string> out;
  for (const G& g : groups) out.push_back(std::to_string(g.id) + ":" + g.cpus.ToListString());
  return out;
}

// Two sockets, 2 cores each, SMT2 with Linux's usual numbering (siblings n and n+4), core_id
// 0 and 1 repeated in both packages (the Go driver's collision), one node per socket.
void TwoSocketSmt2(SysfsFixture& f) {
  f.CpuFile("online", "0-7\n").CpuFile("present", "0-7\n").CpuFile("possible", "0-7\n");
  for (int cpu = 0; cpu < 8; ++cpu) {
    const int first = cpu % 4;
    SysfsFixture::CpuSpec spec;
    spec.package = first % 2;
    spec.core_id = first / 2;
    spec.siblings = std::to_string(first) + "," + std::to_string(first + 4);
    spec.node = first % 2;
    f.Cpu(cpu, spec);
    f.Cache(cpu, 0, {2, "Unified", spec.siblings, first});
    f.Cache(cpu, 1, {3, "Unified", first % 2 == 0 ? "0,2,4,6" : "1,3,5,7", first % 2});
  }
  f.Node(0, "0,2,4,6", "10 21").Node(1, "1,3,5,7", "21 10");
}

TEST(DiscoverTopology, TwoSocketsSmt2CoresBySiblingsNotCoreId) {
  auto f = NewFixture();
  TwoSocketSmt2(*f);
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_EQ(topo->online.ToListString(), "0-7");
  EXPECT_THAT(Sets(topo->cores), ElementsAre("0,4", "1,5", "2,6", "3,7"));
  EXPECT_THAT(IdSets(topo->packages), ElementsAre("0:0,2,4,6", "1:1,3,5,7"));
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("0:0,2,4,6", "1:1,3,5,7"));
  EXPECT_THAT(topo->numa_nodes[1].distances, ElementsAre(std::pair(0, 21), std::pair(1, 10)));
  EXPECT_THAT(IdSets(topo->l3_caches), ElementsAre("0:0,2,4,6", "1:1,3,5,7"));
  EXPECT_THAT(IdSets(topo->l2_caches), ElementsAre("0:0,4", "1:1,5", "2:2,6", "3:3,7"));
  EXPECT_EQ(topo->threads_per_core, std::vector<int>{2});
  EXPECT_TRUE(topo->smt_enabled);  // no smt/control: derived from the sibling sets
  const CpuInfo* cpu6 = topo->FindCpu(6);
  ASSERT_NE(cpu6, nullptr);
  EXPECT_EQ(cpu6->core, 2);
  EXPECT_EQ(cpu6->package, 0);
  EXPECT_EQ(cpu6->numa_node, 0);
  EXPECT_EQ(cpu6->l3, 0);
  EXPECT_EQ(cpu6->l2, 2);
  EXPECT_EQ(cpu6->die, -1);
  EXPECT_EQ(cpu6->type, CoreType::kStandard);
  EXPECT_THAT(topo->warnings, IsEmpty());
}

TEST(DiscoverTopology, AnySmtWidth) {
  for (const int width : {1, 3, 4, 8}) {
    auto f = NewFixture();
    const int n = 2 * width;
    f->CpuFile("online", "0-" + std::to_string(n - 1) + "\n");
    for (int cpu = 0; cpu < n; ++cpu) {
      const int first = cpu / width * width;
      f->Cpu(cpu, {.package = 0,
                   .core_id = cpu / width,
                   .siblings = width == 1 ? std::to_string(cpu)
                                          : std::to_string(first) + "-" +
                                                std::to_string(first + width - 1)});
    }
    auto topo = Discover(*f);
    ASSERT_THAT(topo, IsOk()) << width;
    EXPECT_EQ(topo->cores.size(), 2u);
    EXPECT_EQ(topo->threads_per_core, std::vector<int>{width});
    EXPECT_EQ(topo->cores[1].id, width);
  }
}

TEST(DiscoverTopology, NoCpuOnlineFileUsesTopologyDirsAndOnlineFlags) {
  auto f = NewFixture();
  for (int cpu = 0; cpu < 4; ++cpu) f->Cpu(cpu, {.package = 0, .core_id = cpu});
  f->File("sys/devices/system/cpu/cpu2/online", "0\n");  // offlined
  f->File("sys/devices/system/cpu/cpu3/online", "1\n");
  f->Dir("sys/devices/system/cpu/cpu4");  // a present CPU the kernel gave no topology
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_EQ(topo->online.ToListString(), "0-1,3");
  EXPECT_EQ(topo->present.ToListString(), "0-4");
  EXPECT_EQ(topo->offline.ToListString(), "2,4");
  EXPECT_THAT(Sets(topo->cores), ElementsAre("0", "1", "3"));
  EXPECT_THAT(topo->warnings, Contains(HasSubstr("no cpu/online file")));
}

TEST(DiscoverTopology, MasksWithoutLists) {
  auto f = NewFixture();
  f->CpuFile("online", "0-3\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    f->Cpu(cpu, {.package = 0,
                 .core_id = cpu % 2,
                 .siblings = cpu % 2 == 0 ? "0,2" : "1,3",
                 .legacy = true,
                 .masks_only = true});
    f->Cache(cpu, 0, {.level = 3, .shared = "0-3", .mask_only = true});
  }
  f->Node(0, "0-3", "10", /*as_mask=*/true);
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(Sets(topo->cores), ElementsAre("0,2", "1,3"));
  EXPECT_THAT(IdSets(topo->l3_caches), ElementsAre("0:0-3"));  // no id file: lowest CPU
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("0:0-3"));
}

TEST(DiscoverTopology, ListWinsOverDisagreeingMask) {
  auto f = NewFixture();
  f->CpuFile("online", "0-1\n");
  for (int cpu = 0; cpu < 2; ++cpu) {
    f->Cpu(cpu, {.package = 0, .core_id = cpu, .siblings = std::to_string(cpu)});
    // Bulldozer: shared_cpu_list says the CPU alone, shared_cpu_map says the pair.
    f->File("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index2/level", "2\n");
    f->File("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index2/shared_cpu_list",
            std::to_string(cpu) + "\n");
    f->File("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index2/shared_cpu_map",
            "3\n");
  }
  // POWER9: node cpulist 0-87 (edited), cpumap 0-1.
  f->File("sys/devices/system/node/node0/cpulist", "0-87\n");
  f->File("sys/devices/system/node/node0/cpumap", "3\n");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(IdSets(topo->l2_caches), ElementsAre("0:0", "1:1"));
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("0:0-1"));  // restricted to online CPUs
}

TEST(DiscoverTopology, CpuLessNodesAreKeptEmpty) {
  auto f = NewFixture();
  f->CpuFile("online", "0-1\n");
  f->Cpu(0, {.package = 0, .core_id = 0}).Cpu(1, {.package = 0, .core_id = 1});
  f->Node(0, "0-1", "10 40").Node(250, "", "40 10");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("0:0-1", "250:"));
  EXPECT_THAT(topo->numa_nodes[1].distances, ElementsAre(std::pair(0, 40), std::pair(250, 10)));
}

TEST(DiscoverTopology, OnlineCpusInNoNodeGetMinusOneAndAWarning) {
  auto f = NewFixture();
  f->CpuFile("online", "0-3\n");
  for (int cpu = 0; cpu < 4; ++cpu) f->Cpu(cpu, {.package = 0, .core_id = cpu});
  f->Node(1, "1,3");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_EQ(topo->FindCpu(0)->numa_node, -1);
  EXPECT_EQ(topo->FindCpu(1)->numa_node, 1);
  EXPECT_THAT(topo->warnings,
              Contains(HasSubstr("online CPUs in no NUMA node (NUMA node -1): 0,2")));
}

TEST(DiscoverTopology, OverlappingNodesFollowTheLinkElseTheLowestNode) {
  auto f = NewFixture();
  f->CpuFile("online", "0-3\n");
  f->Cpu(0, {.package = 0, .core_id = 0, .node = 0});
  f->Cpu(1, {.package = 0, .core_id = 1, .node = 2});
  f->Cpu(2, {.package = 0, .core_id = 2});  // no link: lowest listing node
  f->Cpu(3, {.package = 0, .core_id = 3, .node = 2});
  f->Node(0, "0-3").Node(2, "0-3").Node(3, "");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("0:0,2", "2:1,3", "3:"));
  EXPECT_THAT(topo->warnings, Contains(HasSubstr("node2 overlaps CPUs of another node: 0-3")));
}

TEST(DiscoverTopology, PackageIdMinusOneIsOnePackage) {
  auto f = NewFixture();
  f->CpuFile("online", "0-3\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    f->Cpu(cpu, {.package = -1, .core_id = cpu / 2, .siblings = cpu < 2 ? "0-1" : "2-3"});
  }
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(IdSets(topo->packages), ElementsAre("0:0-3"));
  EXPECT_EQ(topo->cores[1].package, 0);
  EXPECT_THAT(topo->warnings, Contains(HasSubstr("physical_package_id is -1")));
}

TEST(DiscoverTopology, SparseIdsAreKept) {
  auto f = NewFixture();
  f->CpuFile("online", "0-1\n");
  f->Cpu(0, {.package = 36, .core_id = 0, .die = 0, .cluster = 138});
  f->Cpu(1, {.package = 8442, .core_id = 0, .die = 1, .cluster = 654});
  f->Cache(0, 0, {.level = 3, .shared = "0", .id = 7});
  f->Cache(1, 0, {.level = 3, .shared = "1", .id = 9});
  f->Node(33, "0").Node(73, "1");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(IdSets(topo->packages), ElementsAre("36:0", "8442:1"));
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("33:0", "73:1"));
  EXPECT_THAT(IdSets(topo->l3_caches), ElementsAre("7:0", "9:1"));
  ASSERT_EQ(topo->clusters.size(), 2u);
  EXPECT_EQ(topo->clusters[1].package, 8442);
  EXPECT_EQ(topo->clusters[1].id, 654);
  ASSERT_EQ(topo->dies.size(), 2u);
  EXPECT_EQ(topo->FindCpu(1)->die, 1);
  EXPECT_EQ(topo->FindCpu(1)->cluster, 654);
}

TEST(DiscoverTopology, DuplicateCacheIdsFallBackToLowestCpu) {
  auto f = NewFixture();
  f->CpuFile("online", "0-3\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    f->Cpu(cpu, {.package = 0, .core_id = cpu});
    f->Cache(cpu, 0, {.level = 2, .shared = cpu < 2 ? "0-1" : "2-3", .id = 0});
  }
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(IdSets(topo->l2_caches), ElementsAre("0:0-1", "2:2-3"));
  EXPECT_EQ(topo->FindCpu(3)->l2, 2);
  EXPECT_THAT(topo->warnings, Contains(HasSubstr("L2 cache ids")));
}

TEST(DiscoverTopology, NoCacheAndNoNodeDirectories) {
  auto f = NewFixture();
  f->CpuFile("online", "0-1\n");
  f->Cpu(0, {.package = 3, .core_id = 0}).Cpu(1, {.package = 3, .core_id = 1});
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(topo->l3_caches, IsEmpty());
  EXPECT_THAT(topo->l2_caches, IsEmpty());
  EXPECT_EQ(topo->FindCpu(1)->l3, -1);
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("0:0-1"));
  EXPECT_EQ(topo->FindCpu(1)->numa_node, 0);
}

TEST(DiscoverTopology, OfflineCpusNeverAppearInGroups) {
  auto f = NewFixture();
  f->CpuFile("online", "0-1,3\n").CpuFile("offline", "2,4-127\n");
  f->CpuFile("present", "0-3\n").CpuFile("possible", "0-127\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    f->Cpu(cpu, {.package = 0, .core_id = cpu % 2, .siblings = cpu % 2 == 0 ? "0,2" : "1,3"});
    f->Cache(cpu, 0, {.level = 3, .shared = "0-3"});
  }
  f->Node(0, "0-3");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_EQ(topo->offline.ToListString(), "2,4-127");
  EXPECT_THAT(Sets(topo->cores), ElementsAre("0", "1,3"));
  EXPECT_THAT(IdSets(topo->l3_caches), ElementsAre("0:0-1,3"));
  EXPECT_THAT(IdSets(topo->numa_nodes), ElementsAre("0:0-1,3"));
  EXPECT_THAT(IdSets(topo->packages), ElementsAre("0:0-1,3"));
  EXPECT_EQ(topo->FindCpu(2), nullptr);
  EXPECT_EQ(topo->threads_per_core, (std::vector<int>{1, 2}));
}

TEST(DiscoverTopology, IntelHybridCoreTypes) {
  auto f = NewFixture();
  f->CpuFile("online", "0-5\n");
  for (int cpu = 0; cpu < 6; ++cpu) {
    f->Cpu(cpu, {.package = 0,
                 .core_id = cpu < 4 ? cpu / 2 : cpu,
                 .siblings = cpu < 2   ? "0-1"
                             : cpu < 4 ? "2-3"
                                       : std::to_string(cpu)});
  }
  f->File("sys/devices/cpu_core/cpus", "0-3\n").File("sys/devices/cpu_atom/cpus", "4-5\n");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_EQ(topo->cores[0].type, CoreType::kPerformance);
  EXPECT_EQ(topo->cores[2].type, CoreType::kEfficiency);
  EXPECT_EQ(topo->FindCpu(1)->type, CoreType::kPerformance);
  EXPECT_EQ(topo->FindCpu(5)->type, CoreType::kEfficiency);
  EXPECT_EQ(topo->threads_per_core, (std::vector<int>{1, 2}));
}

// Arm core types from cpu_capacity classes (values within 10% of the previous one are one
// class; the highest class is p-core): big.LITTLE, DynamIQ with two close values per type
// (as NVIDIA GB10), three classes (a phone: the two lower ones are e-core), one class, and a CPU
// without the file (no types at all).
TEST(DiscoverTopology, ArmCoreTypesFromCapacityClasses) {
  const struct {
    const char* name;
    std::vector<int> capacity;  // per CPU 0..n-1; -1: no file
    const char* p_cores;        // "" when every CPU is standard
    bool warns;
  } kCases[] = {
      {"big.LITTLE", {446, 446, 446, 446, 1024, 1024, 1024, 1024}, "4-7", false},
      {"close values per type", {718, 731, 997, 1017, 1024, 718}, "2-4", false},
      {"three classes", {280, 280, 855, 855, 1024}, "4", true},
      {"one class", {1024, 1024, 1000, 1024}, "", false},
      {"a CPU without cpu_capacity", {446, 1024, -1, 1024}, "", false},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    auto f = NewFixture();
    const int n = static_cast<int>(c.capacity.size());
    f->CpuFile("online", "0-" + std::to_string(n - 1) + "\n");
    for (int cpu = 0; cpu < n; ++cpu) {
      f->Cpu(cpu, {.package = 0,
                   .core_id = cpu,
                   .siblings = std::to_string(cpu),
                   .capacity = c.capacity[cpu]});
    }
    auto topo = Discover(*f);
    ASSERT_THAT(topo, IsOk());
    const CpuSet p = CpuSet::ParseList(c.p_cores).value();
    for (int cpu = 0; cpu < n; ++cpu) {
      const CoreType want = p.Empty()         ? CoreType::kStandard
                            : p.Contains(cpu) ? CoreType::kPerformance
                                              : CoreType::kEfficiency;
      EXPECT_EQ(topo->FindCpu(cpu)->type, want) << "cpu" << cpu;
      EXPECT_EQ(topo->FindCpu(cpu)->capacity, c.capacity[cpu]) << "cpu" << cpu;
    }
    const bool warned =
        std::any_of(topo->warnings.begin(), topo->warnings.end(),
                    [](const std::string& w) { return w.find("cpu_capacity has 3 classes") == 0; });
    EXPECT_EQ(warned, c.warns) << ::testing::PrintToString(topo->warnings);
  }
}

TEST(DiscoverTopology, SmtControlDecidesSmtEnabled) {
  const struct {
    const char* control;
    bool enabled;
  } kCases[] = {{"on", true}, {"off", false}, {"forceoff", false}, {"notsupported", false}};
  for (const auto& c : kCases) {
    auto f = NewFixture();
    TwoSocketSmt2(*f);
    f->CpuFile("smt/control", std::string(c.control) + "\n");
    auto topo = Discover(*f);
    ASSERT_THAT(topo, IsOk());
    EXPECT_EQ(topo->smt_enabled, c.enabled) << c.control;
    EXPECT_EQ(topo->smt_control, c.control);
  }
}

TEST(DiscoverTopology, PcieRootsFromBusAffinityOrDevices) {
  auto f = NewFixture();
  TwoSocketSmt2(*f);
  f->File("sys/devices/pci0000:00/pci_bus/0000:00/cpulistaffinity", "0,2,4,6\n");
  f->File("sys/devices/pci0000:80/pci_bus/0000:80/cpuaffinity", "aa\n");  // mask only
  f->File("sys/devices/pci0000:ff/0000:ff:08.0/local_cpulist", "1,3\n");  // no bus files
  f->File("sys/devices/pci0000:7f/readme", "x\n");                        // no locality
  f->Dir("sys/devices/pcie_thing").Dir("sys/devices/platform");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  ASSERT_EQ(topo->pcie_roots.size(), 3u);
  EXPECT_EQ(topo->pcie_roots[0].name, "pci0000:00");
  EXPECT_EQ(topo->pcie_roots[0].cpus.ToListString(), "0,2,4,6");
  EXPECT_EQ(topo->pcie_roots[1].cpus.ToListString(), "1,3,5,7");
  EXPECT_EQ(topo->pcie_roots[2].name, "pci0000:ff");
  EXPECT_EQ(topo->pcie_roots[2].cpus.ToListString(), "1,3");
  EXPECT_THAT(topo->warnings, Contains(HasSubstr("pci0000:7f")));
  auto without = Discover(*f, {.pcie_roots = false});
  ASSERT_THAT(without, IsOk());
  EXPECT_THAT(without->pcie_roots, IsEmpty());
}

TEST(DiscoverTopology, DistanceRowOfTheWrongLengthIsIgnoredWithAWarning) {
  auto f = NewFixture();
  TwoSocketSmt2(*f);
  f->Node(1, "1,3,5,7", "21 10 10");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(topo->numa_nodes[1].distances, IsEmpty());
  EXPECT_THAT(topo->warnings, Contains(HasSubstr("node1/distance has 3 entries")));
}

TEST(DiscoverTopology, DistanceRowFallsBackToPossibleNodesWithAWarning) {
  // The Haswell dump: node0 removed (node/online = 1) but node1/distance still "21 10".
  auto f = NewFixture();
  f->CpuFile("online", "0-1\n");
  f->Cpu(0, {.package = 0, .core_id = 0}).Cpu(1, {.package = 0, .core_id = 1});
  f->Node(1, "0-1", "21 10");
  f->File("sys/devices/system/node/online", "1\n");
  f->File("sys/devices/system/node/possible", "0-1\n");
  auto topo = Discover(*f);
  ASSERT_THAT(topo, IsOk());
  EXPECT_THAT(topo->numa_nodes[0].distances, ElementsAre(std::pair(0, 21), std::pair(1, 10)));
  EXPECT_THAT(topo->warnings,
              Contains(HasSubstr("node1/distance has 2 entries: mapped to node/possible")));
}

TEST(DiscoverTopology, DumpPaddingIsAccepted) {
  auto f = NewFixture();
  TwoSocketSmt2(*f);
  f->CpuFile("online", "0-7\n\0"s);
  f->File("sys/devices/system/cpu/cpu0/topology/core_cpus_list", "0,4\n\0"s);
  f->File("sys/devices/system/node/node0/cpulist", "0,2,4,6\n\n");
  EXPECT_THAT(Discover(*f), IsOk());
}

TEST(DiscoverTopology, MissingCpuDirectoryIsNotFound) {
  auto f = NewFixture();
  f->Dir("sys/devices");
  EXPECT_THAT(Discover(*f), StatusIs(StatusCode::kNotFound, HasSubstr("sys/devices/system/cpu")));
}

TEST(DiscoverTopology, NoOnlineCpuIsAFailedPrecondition) {
  auto f = NewFixture();
  f->CpuFile("online", "\n");
  EXPECT_THAT(Discover(*f), StatusIs(StatusCode::kFailedPrecondition, HasSubstr("no online CPU")));
}

// Every malformed file gives an error naming that file, never a crash or a silent default.
TEST(DiscoverTopology, MalformedFilesNameTheFile) {
  const std::string huge(100 * 1024, '1');
  const struct {
    std::string path;
    std::string content;
    StatusCode code;
    const char* why;
  } kCases[] = {
      {"sys/devices/system/cpu/online", "0-3x\n", StatusCode::kInvalidArgument, "unexpected"},
      {"sys/devices/system/cpu/online", "3-0\n", StatusCode::kInvalidArgument, "reversed"},
      {"sys/devices/system/cpu/online", huge, StatusCode::kResourceExhausted, "larger than"},
      {"sys/devices/system/cpu/present", "\0\0garbage"s, StatusCode::kInvalidArgument, ""},
      {"sys/devices/system/cpu/cpu1/topology/physical_package_id", "", StatusCode::kInvalidArgument,
       "empty file"},
      {"sys/devices/system/cpu/cpu1/topology/physical_package_id", "one\n",
       StatusCode::kInvalidArgument, "not an integer"},
      {"sys/devices/system/cpu/cpu1/topology/die_id", "1 2\n", StatusCode::kInvalidArgument,
       "junk"},
      {"sys/devices/system/cpu/cpu0/topology/core_cpus_list", "0,,4\n",
       StatusCode::kInvalidArgument, "empty item"},
      {"sys/devices/system/cpu/cpu0/topology/core_cpus_list", "", StatusCode::kOk, ""},
      {"sys/devices/system/cpu/cpu2/cache/index0/level", "three\n", StatusCode::kInvalidArgument,
       "not an integer"},
      {"sys/devices/system/cpu/cpu2/cache/index1/shared_cpu_list", "0-2-4\n",
       StatusCode::kInvalidArgument, ""},
      {"sys/devices/system/cpu/cpu2/cache/index1/id", "\n", StatusCode::kInvalidArgument,
       "empty file"},
      {"sys/devices/system/node/node1/cpulist", "1,3,5,7 \n", StatusCode::kInvalidArgument, ""},
      {"sys/devices/system/node/node1/distance", "21,10\n", StatusCode::kInvalidArgument,
       "not a non-negative integer"},
      {"sys/devices/system/node/online", "0-1-\n", StatusCode::kInvalidArgument, ""},
      {"sys/devices/system/cpu/smt/control", "\n", StatusCode::kInvalidArgument, "empty file"},
      {"sys/devices/cpu_atom/cpus", "x\n", StatusCode::kInvalidArgument, ""},
      {"sys/devices/pci0000:00/pci_bus/0000:00/cpulistaffinity", "0-\n",
       StatusCode::kInvalidArgument, ""},
  };
  for (const auto& c : kCases) {
    auto f = NewFixture();
    TwoSocketSmt2(*f);
    f->File(c.path, c.content);
    auto topo = Discover(*f);
    if (c.code == StatusCode::kOk) {
      // An empty sibling list is the empty set: the CPU still forms its own core.
      EXPECT_THAT(topo, IsOk()) << c.path;
      continue;
    }
    EXPECT_THAT(topo, StatusIs(c.code, AllOf(HasSubstr(c.path), HasSubstr(c.why))))
        << c.path << " = " << c.content.substr(0, 20);
  }
}

}  // namespace
}  // namespace dracpu
