// Topology discovery on the 27 real machines of ../shared/sysfs-corpus: each tree is extracted to
// a temp dir, discovered, and compared exactly with sysfs.json (what the kernel's files say) and,
// where the corpus README says hwloc and the raw files agree, with expected.json.
//
// sysfs.json lists the raw node CPU sets; the README's three deliberate rules (no node dir ->
// node 0 with every online CPU; CPUs in no node -> -1; overlapping nodes -> one node per CPU) are
// applied to it here before comparing, exactly as docs/topology.md states them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/file_system.h"
#include "common/topology_discovery.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu {
namespace {

using ::testing::ElementsAreArray;
using ::testing::UnorderedElementsAreArray;

// The corpus as the README lists it; CorpusListIsComplete fails when the directory changes.
const char* const kMachines[] = {
    "amd-bulldozer-4s-8numa",
    "amd-epyc7451-2s-8numa-16ccx",
    "amd-magnycours-4s-8numa-sparse",
    "amd-opteron-8s-8numa",
    "arm-armv7-dualcore-minimal",
    "arm-kunpeng920-2s-4numa-clusters",
    "arm-phone-a510-a710-a715-x3",
    "ibm-power7-64cpu-2numa",
    "ibm-power7-8numa-smt4",
    "ibm-power9-gpu-numa-nodes",
    "ibm-x3950m2-4numa-16s",
    "intel-cascadelake-2s-snc2-ht",
    "intel-clovertown-2s-shared-l2",
    "intel-harpertown-2s-buggy-numa",
    "intel-haswell-2s-offline-cpu0-node0",
    "intel-knl-snc4-hybrid-mini",
    "intel-nehalem-ex-4s-odd-numa",
    "intel-netburst-4s-ht-offline",
    "intel-netburst-4s-ht-uma",
    "intel-raptorlake-i7-1370p-hybrid",
    "intel-sandybridge-2s-pci",
    "intel-skylake-sp-2s-ht-pci",
    "intel-westmere-ex-4s-pci",
    "loongson-3a5000-4c",
    "nvidia-gb10-arm-hybrid",
    "qemu-4s-dies-16numa",
    "riscv-sg2042-64c-4numa",
};

// Fields where hwloc's expected.json differs from the raw files on purpose (README
// "Verification results"); those fields are compared with sysfs.json only.
const std::map<std::string, std::set<std::string>> kHwlocDiffers = {
    {"amd-bulldozer-4s-8numa", {"cores", "l2", "threads_per_core"}},
    {"ibm-power7-8numa-smt4", {"packages"}},
    {"ibm-power7-64cpu-2numa", {"packages"}},
    {"ibm-power9-gpu-numa-nodes", {"numa_nodes"}},
    {"intel-harpertown-2s-buggy-numa", {"numa_nodes"}},
    {"intel-knl-snc4-hybrid-mini", {"numa_nodes"}},
    {"intel-sandybridge-2s-pci", {"pci"}},
};

Result<rapidjson::Document> LoadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot open " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(buffer.str().c_str());
  if (doc.HasParseError() || !doc.IsObject()) return InvalidArgumentError("bad JSON in " + path);
  return doc;
}

// A canonical cpulist of a JSON string (re-printed so formatting differences cannot matter).
std::string Canon(const rapidjson::Value& v) {
  Result<CpuSet> set = CpuSet::ParseList(v.GetString());
  EXPECT_THAT(set, IsOk());
  return set.ok() ? set->ToListString() : "<bad>";
}

std::vector<std::string> Lists(const rapidjson::Value& array) {
  std::vector<std::string> out;
  for (const auto& v : array.GetArray()) out.push_back(Canon(v.IsObject() ? v["cpus"] : v));
  return out;
}

template <typename Group>
std::vector<std::string> Lists(const std::vector<Group>& groups) {
  std::vector<std::string> out;
  for (const Group& g : groups) out.push_back(g.cpus.ToListString());
  return out;
}

class TopologyCorpusTest : public ::testing::TestWithParam<const char*> {};

TEST(TopologyCorpus, CorpusListIsComplete) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  EXPECT_THAT(testing::CorpusMachines(shared), ElementsAreArray(kMachines));
}

TEST_P(TopologyCorpusTest, MatchesSysfsJsonAndHwloc) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  const std::string machine = GetParam();
  const std::string dir = shared + "/sysfs-corpus/" + machine;
  Result<std::unique_ptr<testing::TempDir>> tree = testing::ExtractCorpusMachine(shared, machine);
  ASSERT_THAT(tree, IsOk());
  Result<std::unique_ptr<FileSystem>> fs = NewPosixFileSystem((*tree)->path());
  ASSERT_THAT(fs, IsOk());
  Result<CpuTopology> discovered = DiscoverTopology(**fs);
  ASSERT_THAT(discovered, IsOk());
  const CpuTopology& topo = *discovered;
  Result<rapidjson::Document> sysfs_doc = LoadJson(dir + "/sysfs.json");
  ASSERT_THAT(sysfs_doc, IsOk());
  const rapidjson::Document& sysfs = *sysfs_doc;

  // CPU sets; present/possible/offline are null in sysfs.json when the tree has no such file.
  EXPECT_EQ(topo.online.ToListString(), Canon(sysfs["online"]));
  for (const auto& [key, set] : {std::pair<const char*, const CpuSet*>{"present", &topo.present},
                                 {"possible", &topo.possible},
                                 {"offline", &topo.offline},
                                 {"isolated", &topo.isolated}}) {
    if (sysfs.HasMember(key) && sysfs[key].IsString()) {
      EXPECT_EQ(set->ToListString(), Canon(sysfs[key])) << key;
    }
  }

  // Packages: ids and CPU sets; a physical_package_id of -1 means one package (id chosen by us).
  std::vector<std::string> want_packages;
  for (const auto& p : sysfs["packages"].GetArray()) {
    want_packages.push_back(
        (p["id"].GetInt() < 0 ? std::string("?") : std::to_string(p["id"].GetInt())) + ":" +
        Canon(p["cpus"]));
  }
  std::vector<std::string> got_packages;
  const bool minus_one = sysfs["packages"].Size() == 1 && sysfs["packages"][0]["id"].GetInt() < 0;
  for (const CpuGroup& p : topo.packages) {
    got_packages.push_back((minus_one ? std::string("?") : std::to_string(p.id)) + ":" +
                           p.cpus.ToListString());
  }
  EXPECT_THAT(got_packages, UnorderedElementsAreArray(want_packages));

  // Dies and clusters (package, id, CPUs) where the files exist.
  auto keyed = [](const rapidjson::Value& array) {
    std::vector<std::string> out;
    for (const auto& d : array.GetArray()) {
      out.push_back(std::to_string(d["package"].GetInt()) + "/" + std::to_string(d["id"].GetInt()) +
                    ":" + Canon(d["cpus"]));
    }
    return out;
  };
  std::vector<std::string> got_dies;
  for (const Die& d : topo.dies) {
    got_dies.push_back(std::to_string(d.package) + "/" + std::to_string(d.id) + ":" +
                       d.cpus.ToListString());
  }
  std::vector<std::string> got_clusters;
  for (const Cluster& c : topo.clusters) {
    got_clusters.push_back(std::to_string(c.package) + "/" + std::to_string(c.id) + ":" +
                           c.cpus.ToListString());
  }
  EXPECT_THAT(got_dies, UnorderedElementsAreArray(keyed(sysfs["dies"])));
  EXPECT_THAT(got_clusters, UnorderedElementsAreArray(keyed(sysfs["clusters"])));

  // Cores as SMT sibling sets, threads per core, L3 and L2 groups.
  EXPECT_THAT(Lists(topo.cores), UnorderedElementsAreArray(Lists(sysfs["cores"])));
  std::vector<int> tpc;
  for (const auto& v : sysfs["threads_per_core"].GetArray()) tpc.push_back(v.GetInt());
  EXPECT_EQ(topo.threads_per_core, tpc);
  EXPECT_THAT(Lists(topo.l3_caches), UnorderedElementsAreArray(Lists(sysfs["l3"])));
  EXPECT_THAT(Lists(topo.l2_caches), UnorderedElementsAreArray(Lists(sysfs["l2"])));

  // NUMA nodes, after the README's rules.
  std::map<int, CpuSet> want_nodes;
  if (sysfs["numa_nodes"].Size() == 0) {
    want_nodes[0] = topo.online;  // rule 1: no node/ directory
  } else {
    // Rule 3: a CPU listed by several nodes goes to the node its cpuN/nodeM link names, else
    // to the lowest node listing it.
    std::map<int, CpuSet> raw;
    std::map<int, std::vector<int>> listed_by;
    for (const auto& n : sysfs["numa_nodes"].GetArray()) {
      const int id = n["os_index"].GetInt();
      raw[id] = *CpuSet::ParseList(n["cpus"].GetString());
      want_nodes[id] = CpuSet();
      for (const int cpu : raw[id]) listed_by[cpu].push_back(id);
    }
    for (const auto& [cpu, nodes] : listed_by) {
      int node = nodes.front();
      if (nodes.size() > 1) {
        for (const int candidate : nodes) {
          const std::string link = (*tree)->path() + "/sys/devices/system/cpu/cpu" +
                                   std::to_string(cpu) + "/node" + std::to_string(candidate);
          if (std::filesystem::exists(std::filesystem::symlink_status(link))) {
            node = candidate;
            break;
          }
        }
      }
      want_nodes[node].Set(cpu);
    }
  }
  std::map<int, CpuSet> got_nodes;
  for (const NumaNode& n : topo.numa_nodes) got_nodes[n.id] = n.cpus;
  std::vector<std::string> want_n, got_n;
  for (const auto& [id, cpus] : want_nodes)
    want_n.push_back(std::to_string(id) + ":" + cpus.ToListString());
  for (const auto& [id, cpus] : got_nodes)
    got_n.push_back(std::to_string(id) + ":" + cpus.ToListString());
  EXPECT_THAT(got_n, ElementsAreArray(want_n));
  // Rule 2: every online CPU in no node has numa_node -1 and a warning says so.
  CpuSet in_nodes;
  for (const auto& [id, cpus] : want_nodes) in_nodes |= cpus;
  for (const CpuInfo& cpu : topo.cpus) {
    EXPECT_EQ(cpu.numa_node == -1, !in_nodes.Contains(cpu.id)) << "cpu" << cpu.id;
  }
  if (!(in_nodes == topo.online)) {
    EXPECT_THAT(topo.warnings, ::testing::Contains(::testing::HasSubstr("in no NUMA node")));
  }

  // Arm cpu_capacity classes (value -> CPUs).
  if (sysfs.HasMember("cpu_capacity")) {
    std::map<int, CpuSet> classes;
    for (const CpuInfo& cpu : topo.cpus) classes[cpu.capacity].Set(cpu.id);
    std::map<int, std::string> got_cap, want_cap;
    for (const auto& [cap, cpus] : classes) got_cap[cap] = cpus.ToListString();
    for (const auto& m : sysfs["cpu_capacity"].GetObject()) {
      want_cap[std::stoi(m.name.GetString())] = Canon(m.value);
    }
    EXPECT_EQ(got_cap, want_cap);
  }

  // expected.json (hwloc), except the fields the README says it normalises on this machine.
  Result<rapidjson::Document> hwloc_doc = LoadJson(dir + "/expected.json");
  ASSERT_THAT(hwloc_doc, IsOk());
  const rapidjson::Document& hwloc = *hwloc_doc;
  const auto differs =
      kHwlocDiffers.count(machine) ? kHwlocDiffers.at(machine) : std::set<std::string>{};
  EXPECT_EQ(topo.online.ToListString(), Canon(hwloc["online_cpus"]));
  if (!differs.count("packages")) {
    std::vector<std::string> want;
    for (const auto& p : hwloc["packages"].GetArray()) {
      want.push_back(std::to_string(p["os_index"].GetInt()) + ":" + Canon(p["cpus"]));
    }
    std::vector<std::string> got;
    for (const CpuGroup& p : topo.packages)
      got.push_back(std::to_string(p.id) + ":" + p.cpus.ToListString());
    if (minus_one) {
      EXPECT_THAT(Lists(topo.packages), UnorderedElementsAreArray(Lists(hwloc["packages"])));
    } else {
      EXPECT_THAT(got, UnorderedElementsAreArray(want)) << "hwloc packages";
    }
  }
  if (!differs.count("cores")) {
    EXPECT_THAT(Lists(topo.cores), UnorderedElementsAreArray(Lists(hwloc["cores"])))
        << "hwloc cores";
  }
  if (!differs.count("threads_per_core")) {
    std::vector<int> want;
    for (const auto& v : hwloc["threads_per_core"].GetArray()) want.push_back(v.GetInt());
    EXPECT_EQ(topo.threads_per_core, want) << "hwloc threads per core";
  }
  EXPECT_THAT(Lists(topo.l3_caches), UnorderedElementsAreArray(Lists(hwloc["l3"]))) << "hwloc l3";
  if (!differs.count("l2")) {
    EXPECT_THAT(Lists(topo.l2_caches), UnorderedElementsAreArray(Lists(hwloc["l2"]))) << "hwloc l2";
  }
  if (!differs.count("numa_nodes")) {
    std::vector<std::string> want;
    for (const auto& n : hwloc["numa_nodes"].GetArray()) {
      want.push_back(std::to_string(n["os_index"].GetInt()) + ":" + Canon(n["cpus"]));
    }
    EXPECT_THAT(got_n, UnorderedElementsAreArray(want)) << "hwloc NUMA nodes";
  }

  // Core types against hwloc's CPU kinds (Intel cpu_core/cpu_atom, Arm cpu_capacity classes): one
  // kind is a machine without core types; with several, the highest kind is p-core and every
  // lower kind e-core (the phone's A510 and A710 kinds both).
  // The Raptor Lake tree has no cpu_core/cpu_atom files (hwloc took its kinds from cpufreq,
  // which we do not read for types), so it reads as a machine without core types.
  if (hwloc.HasMember("cpu_kinds") && hwloc["cpu_kinds"].IsArray() &&
      machine != "intel-raptorlake-i7-1370p-hybrid") {
    const auto& kinds = hwloc["cpu_kinds"];
    int top = -1;
    for (const auto& k : kinds.GetArray()) top = std::max(top, k["kind"].GetInt());
    for (const auto& k : kinds.GetArray()) {
      const CoreType want = kinds.Size() == 1           ? CoreType::kStandard
                            : k["kind"].GetInt() == top ? CoreType::kPerformance
                                                        : CoreType::kEfficiency;
      // A local: a range-for over .value() of the temporary Result would outlive it.
      const CpuSet kind_cpus = CpuSet::ParseList(k["cpus"].GetString()).value();
      for (const int cpu : kind_cpus) {
        const CpuInfo* info = topo.FindCpu(cpu);
        ASSERT_NE(info, nullptr) << "cpu" << cpu;
        EXPECT_EQ(info->type, want) << "cpu" << cpu << " of hwloc kind " << k["kind"].GetInt();
      }
    }
  }

  EXPECT_THAT(topo.Validate(), IsOk());

  // Every per-CPU record points at groups that contain the CPU.
  auto find = [](const auto& groups, int id) -> const CpuSet* {
    for (const auto& g : groups) {
      if (g.id == id) return &g.cpus;
    }
    return nullptr;
  };
  for (const CpuInfo& cpu : topo.cpus) {
    SCOPED_TRACE("cpu" + std::to_string(cpu.id));
    const CpuSet* core = find(topo.cores, cpu.core);
    ASSERT_NE(core, nullptr);
    EXPECT_TRUE(core->Contains(cpu.id));
    const CpuSet* package = find(topo.packages, cpu.package);
    ASSERT_NE(package, nullptr);
    EXPECT_TRUE(package->Contains(cpu.id));
    if (cpu.numa_node >= 0) {
      EXPECT_TRUE(find(topo.numa_nodes, cpu.numa_node)->Contains(cpu.id));
    }
    EXPECT_EQ(cpu.l3 >= 0, !topo.l3_caches.empty());
    if (cpu.l3 >= 0) {
      EXPECT_TRUE(find(topo.l3_caches, cpu.l3)->Contains(cpu.id));
    }
    if (cpu.l2 >= 0) {
      EXPECT_TRUE(find(topo.l2_caches, cpu.l2)->Contains(cpu.id));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, TopologyCorpusTest, ::testing::ValuesIn(kMachines),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace dracpu
