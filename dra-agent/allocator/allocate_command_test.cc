#include "dra-agent/allocator/allocate_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testing/shared_data.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::allocator {
namespace {

using ::testing::HasSubstr;

// topoDualSocketHT: 2 sockets = 2 NUMA nodes, 6 cores x 2 threads; socket 0 = even CPUs,
// siblings i and i+6.
std::string DualSocketHT() {
  std::string s = "{\"cpus\": [";
  for (int cpu = 0; cpu < 12; ++cpu) {
    if (cpu > 0) s += ",";
    const int socket = cpu % 2;
    s += "{\"cpu\":" + std::to_string(cpu) + ",\"core\":" + std::to_string(cpu % 6) +
         ",\"socket\":" + std::to_string(socket) + ",\"numa\":" + std::to_string(socket) +
         ",\"l3\":" + std::to_string(socket) + ",\"coreType\":\"standard\"}";
  }
  return s + "]}";
}

struct CommandRun {
  int rc;
  std::string out, err;
  rapidjson::Document json;
};

CommandRun Allocate(const std::string& input, std::vector<std::string> args = {}) {
  std::istringstream in(input);
  std::ostringstream out, err;
  CommandRun r;
  r.rc = RunAllocateCommand(args, {in, out, err});
  r.out = out.str();
  r.err = err.str();
  r.json.Parse(r.out.c_str());
  return r;
}

std::vector<int> Ints(const rapidjson::Value& v) {
  std::vector<int> out;
  for (const auto& x : v.GetArray()) out.push_back(x.GetInt());
  return out;
}

TEST(AllocateCommandTest, PrintsCpusAndMetricsAndExitsZero) {
  const CommandRun r =
      Allocate("{\"topology\": " + DualSocketHT() +
               ", \"available\": \"0-11\", \"request\": 4,"
               " \"options\": {\"full-pcpus-only\": \"true\"}, \"reserved\": [0]}");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_FALSE(r.json.HasParseError()) << r.out;
  // Socket 0 lost core {0,6} to the reservation, so the fullest socket that holds two whole
  // cores is socket 0 with cores {2,8} and {4,10}.
  EXPECT_EQ(Ints(r.json["cpus"]), (std::vector<int>{2, 4, 8, 10}));
  const auto& m = r.json["metrics"];
  EXPECT_EQ(m["numaSpan"].GetInt(), 1);
  EXPECT_EQ(m["socketSpan"].GetInt(), 1);
  EXPECT_EQ(m["l3Span"].GetInt(), 1);
  EXPECT_EQ(m["coresTouched"].GetInt(), 2);
  EXPECT_EQ(m["partialCores"].GetInt(), 0);
  EXPECT_EQ(m.MemberCount(), 5u);
  EXPECT_EQ(r.json.MemberCount(), 2u);
}

TEST(AllocateCommandTest, ReadsInputFileAndAllocatesContainersInOrder) {
  char path[] = "/tmp/dracpu-allocate-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "{\"topology\": " << DualSocketHT()
                      << ", \"available\": [1,3,5,7,9,11], \"request\": 3, \"containers\": [2, 1]}";
  const CommandRun r = Allocate("", {"--input", path});
  std::remove(path);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_TRUE(r.json.HasMember("containers")) << r.out;
  EXPECT_EQ(r.json["containers"].Size(), 2u);
  EXPECT_EQ(Ints(r.json["cpus"]).size(), 3u);
}

TEST(AllocateCommandTest, CannotBeMetExitsOneWithError) {
  const CommandRun r =
      Allocate("{\"topology\": " + DualSocketHT() + ", \"available\": [0, 2, 4], \"request\": 5}");
  EXPECT_EQ(r.rc, 1);
  ASSERT_TRUE(r.json.IsObject()) << r.out;
  EXPECT_THAT(r.json["error"].GetString(),
              HasSubstr("not enough cpus available to satisfy request: requested=5, available=3"));
  const CommandRun smt = Allocate("{\"topology\": " + DualSocketHT() +
                                  ", \"available\": \"0-11\", \"request\": 3,"
                                  " \"options\": {\"full-pcpus-only\": true}}");
  EXPECT_EQ(smt.rc, 1);
  EXPECT_THAT(smt.out, HasSubstr("SMTAlignmentError{RequestedCPUs: 3, CpusPerCore: 2}"));
}

struct Malformed {
  const char* name;
  std::string input;
  const char* field;
};

class AllocateCommandMalformedTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(AllocateCommandMalformedTest, ExitsTwoNamingTheField) {
  const CommandRun r = Allocate(GetParam().input);
  EXPECT_EQ(r.rc, 2) << r.out;
  ASSERT_TRUE(r.json.IsObject() && r.json.HasMember("error")) << r.out;
  EXPECT_THAT(r.json["error"].GetString(), HasSubstr(GetParam().field));
  EXPECT_THAT(r.err, HasSubstr(GetParam().field));
}

const std::string kTopo = "{\"topology\": " + DualSocketHT();

INSTANTIATE_TEST_SUITE_P(
    Cases, AllocateCommandMalformedTest,
    ::testing::Values(
        Malformed{"not_json", "{", "input: not valid JSON"},
        Malformed{"not_object", "[1]", "input: must be a JSON object"},
        Malformed{"no_topology", "{\"available\": [0], \"request\": 1}", "topology: missing"},
        Malformed{"topology_name_without_file",
                  "{\"topology\": \"x\", \"available\": [0], "
                  "\"request\": 1}",
                  "--topologies"},
        Malformed{"record_field",
                  "{\"topology\": {\"cpus\": [{\"cpu\": 0, \"socket\": 0}]},"
                  " \"available\": [0], \"request\": 1}",
                  "topology.cpus[0].core: missing"},
        Malformed{"core_type",
                  "{\"topology\": {\"cpus\": [{\"cpu\": 0, \"core\": 0, \"socket\": 0,"
                  " \"coreType\": \"big\"}]}, \"available\": [0], \"request\": 1}",
                  "topology.cpus[0].coreType"},
        Malformed{"no_available", kTopo + ", \"request\": 1}", "available: missing"},
        Malformed{"available_item", kTopo + ", \"available\": [0, \"x\"], \"request\": 1}",
                  "available[1]"},
        Malformed{"available_list", kTopo + ", \"available\": \"0-\", \"request\": 1}",
                  "available"},
        Malformed{"available_unknown_cpu", kTopo + ", \"available\": [0, 99], \"request\": 1}",
                  "available CPUs not in the topology: 99"},
        Malformed{"request", kTopo + ", \"available\": [0], \"request\": -1}", "request"},
        Malformed{"request_type", kTopo + ", \"available\": [0], \"request\": \"2\"}", "request"},
        Malformed{"option_name",
                  kTopo + ", \"available\": [0], \"request\": 1,"
                          " \"options\": {\"fast\": \"true\"}}",
                  "option \"fast\": unknown placement key"},
        Malformed{"option_value",
                  kTopo + ", \"available\": [0], \"request\": 1,"
                          " \"options\": {\"full-pcpus-only\": 3}}",
                  "options.full-pcpus-only"},
        Malformed{"numa_affinity",
                  kTopo + ", \"available\": [0], \"request\": 1,"
                          " \"numaAffinity\": [7]}",
                  "NUMA node 7"},
        Malformed{"containers",
                  kTopo + ", \"available\": [0, 2], \"request\": 2,"
                          " \"containers\": [1]}",
                  "containers"},
        Malformed{"resize_currently_allocated",
                  kTopo + ", \"available\": [0], \"request\": 1,"
                          " \"currentlyAllocated\": [0], \"mustKeep\": [0]}",
                  "resize"},
        Malformed{"resize_api",
                  kTopo + ", \"available\": [0], \"request\": 1,"
                          " \"api\": \"takeByTopologyNUMAPackedForResize\"}",
                  "resize"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(AllocateCommandTest, UnknownFlagIsUsageError) {
  const CommandRun r = Allocate("{}", {"--bogus"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("usage: dracpu-dra-agent allocate"));
}

TEST(AllocateCommandTest, ResolvesCaseTopologyNames) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  const CommandRun r =
      Allocate("{\"topology\": \"topoDualSocketHT\", \"available\": \"0-11\", \"request\": 6}",
               {"--topologies", dir + "/alloc-cases/topologies.json"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.json["metrics"]["socketSpan"].GetInt(), 1);
  const CommandRun missing =
      Allocate("{\"topology\": \"noSuchTopology\", \"available\": [0], \"request\": 1}",
               {"--topologies", dir + "/alloc-cases/topologies.json"});
  EXPECT_EQ(missing.rc, 2);
  EXPECT_THAT(missing.out, HasSubstr("noSuchTopology"));
}

// The {"sysfsRoot": DIR} form discovers the topology: a 2-socket Cascade Lake with SNC2 and HT
// from the corpus (4 NUMA nodes of 10 cores, 80 CPUs); 8 CPUs fit one NUMA node on whole cores.
TEST(AllocateCommandTest, DiscoversTheTopologyFromASysfsRoot) {
  DRACPU_REQUIRE_SHARED_DIR(dir);
  auto tree = dracpu::testing::ExtractCorpusMachine(dir, "intel-cascadelake-2s-snc2-ht");
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  const CommandRun r = Allocate("{\"topology\": {\"sysfsRoot\": \"" + (*tree)->path() +
                                "\"}, \"available\": \"0-79\", \"request\": 8}");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const auto& m = r.json["metrics"];
  EXPECT_EQ(m["numaSpan"].GetInt(), 1);
  EXPECT_EQ(m["socketSpan"].GetInt(), 1);
  EXPECT_EQ(m["partialCores"].GetInt(), 0);
  EXPECT_EQ(m["coresTouched"].GetInt(), 4);
  const CommandRun missing = Allocate(
      "{\"topology\": {\"sysfsRoot\": \"/nonexistent-dracpu\"},"
      " \"available\": [0], \"request\": 1}");
  EXPECT_EQ(missing.rc, 2);
  EXPECT_THAT(missing.out, HasSubstr("topology.sysfsRoot"));
}

}  // namespace
}  // namespace dracpu::allocator
