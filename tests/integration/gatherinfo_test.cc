// The gatherinfo contract (issue 2 item 8): GatherInfoCommand on real corpus trees, JSON parsed
// back and checked key by key against discovery and sysfs.json; YAML parsed back with yaml-cpp;
// flag errors exit 2. And the reference driver's gatherinfo (issue 16 item 1): its cpuDetails
// and driverConfig sections, the running agent found under a recorded proc/, --stdout,
// --output-dir and the dracpu-gatherinfo name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/http_server.h"
#include "dra-agent/diagnostics/gatherinfo_command.h"
#include "shm-schema/segment.h"
#include "tests/testing/loop_thread.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/shm_test_util.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;

struct CommandRun {
  int code;
  std::string out;
  std::string err;
};

// Runs gatherinfo. `host_root` holds the proc/ searched for a running agent; by default an empty
// directory, so an agent running on the test machine is never found. Without an explicit --agent
// it does not ask one (hermetic: nothing may be listening on the default port, or something else
// may be).
CommandRun Gather(std::vector<std::string> args, std::string host_root = "", bool legacy = false,
                  std::string temp_dir = "") {
  static const testing::TempDir empty;
  if (host_root.empty()) host_root = empty.path();
  bool agent = false;
  for (const std::string& a : args)
    agent = agent || a.rfind("--agent", 0) == 0 || a == "--no-agent";
  if (!agent) args.insert(args.begin(), "--no-agent");
  std::istringstream in;
  std::ostringstream out, err;
  CommandIo io{in, out, err, host_root, temp_dir};
  const int code = legacy ? LegacyGatherInfoCommand(args, io) : GatherInfoCommand(args, io);
  return {code, out.str(), err.str()};
}

rapidjson::Document ParseJson(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << text.substr(0, 200);
  return doc;
}

TEST(GatherInfo, BadFlagsExitTwoWithMessage) {
  const struct {
    std::vector<std::string> args;
    const char* message;
  } kCases[] = {
      {{"--format", "xml"}, "--format must be yaml, json or summary"},
      {{"--format"}, "--format needs a value"},
      {{"--sysfs-root"}, "--sysfs-root needs a value"},
      {{"--sysfs-root="}, "must not be empty"},
      {{"--bogus"}, "unknown argument \"--bogus\""},
      {{"extra"}, "unknown argument \"extra\""},
  };
  for (const auto& c : kCases) {
    const CommandRun r = Gather(c.args);
    EXPECT_EQ(r.code, kExitUsage) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_THAT(r.err, HasSubstr("usage:"));
    EXPECT_EQ(r.out, "");
  }
}

TEST(GatherInfo, MissingRootFailsNamingIt) {
  const CommandRun r = Gather({"--sysfs-root", "/nonexistent/dracpu-root", "--format", "json"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/dracpu-root"));
}

TEST(GatherInfo, JsonContractOnHaswellWithOfflineCpus) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = testing::ExtractCorpusMachine(shared, "intel-haswell-2s-offline-cpu0-node0");
  ASSERT_THAT(tree, IsOk());
  const CommandRun r = Gather({"--sysfs-root=" + (*tree)->path(), "--format=json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const rapidjson::Document doc = ParseJson(r.out);
  ASSERT_TRUE(doc.IsObject());
  EXPECT_STREQ(doc["layoutVersion"].GetString(), "v1");
  EXPECT_STREQ(doc["toolVersion"]["name"].GetString(), "dracpu-dra-agent");
  EXPECT_TRUE(doc["toolVersion"]["version"].IsString());
  // The reference's view of the same CPUs.
  const auto& details = doc["cpuDetails"];
  EXPECT_EQ(details["topology"]["numCPUs"].GetInt(), 17);
  EXPECT_EQ(details["topology"]["numSockets"].GetInt(), 2);
  EXPECT_EQ(details["topology"]["numNUMANodes"].GetInt(), 1);
  EXPECT_FALSE(details["topology"]["smtEnabled"].GetBool());
  ASSERT_EQ(details["cpus"].Size(), 17u);
  EXPECT_EQ(details["cpus"][1]["cpuID"].GetInt(), 5);
  EXPECT_EQ(details["cpus"][1]["numaNodeID"].GetInt(), 1);
  EXPECT_STREQ(details["cpus"][1]["numaNodeCPUSet"].GetString(), "5,7,9,11,13,15,17,19");
  EXPECT_EQ(details["cpus"][1]["sibling"].GetInt(), -1);
  EXPECT_STREQ(details["cpus"][1]["coreType"].GetString(), "standard");
  EXPECT_FALSE(doc.HasMember("driverConfig"));  // no agent under the empty proc root
  EXPECT_THAT(r.err, HasSubstr("no running dracpu-dra-agent"));
  const auto& t = doc["topology"];
  for (const char* key :
       {"online", "offline", "present", "isolated", "smtEnabled", "threadsPerCore", "packages",
        "dies", "clusters", "numaNodes", "l3Caches", "l2Caches", "cores", "cpus", "pcieRoots"}) {
    EXPECT_TRUE(t.HasMember(key)) << key;
  }
  EXPECT_STREQ(t["online"].GetString(), "4-20");
  EXPECT_STREQ(t["offline"].GetString(), "0-3,21-191");
  EXPECT_STREQ(t["present"].GetString(), "0-23");
  EXPECT_STREQ(t["isolated"].GetString(), "");
  EXPECT_FALSE(t["smtEnabled"].GetBool());  // smt/control is "notsupported"
  EXPECT_EQ(t["threadsPerCore"].GetInt(), 1);
  ASSERT_EQ(t["packages"].Size(), 2u);
  EXPECT_EQ(t["packages"][0]["id"].GetInt(), 0);
  EXPECT_STREQ(t["packages"][0]["cpus"].GetString(), "4,6,8,10,12,14,16,18,20");
  ASSERT_EQ(t["numaNodes"].Size(), 1u);
  EXPECT_EQ(t["numaNodes"][0]["id"].GetInt(), 1);
  EXPECT_STREQ(t["numaNodes"][0]["cpus"].GetString(), "5,7,9,11,13,15,17,19");
  EXPECT_TRUE(t["numaNodes"][0]["distances"].IsObject());
  // Only online CPUs, each with its ids; the even CPUs are in no NUMA node.
  ASSERT_EQ(t["cpus"].Size(), 17u);
  const auto& cpu4 = t["cpus"][0];
  EXPECT_EQ(cpu4["id"].GetInt(), 4);
  EXPECT_EQ(cpu4["package"].GetInt(), 0);
  EXPECT_EQ(cpu4["numaNode"].GetInt(), -1);
  EXPECT_EQ(cpu4["core"].GetInt(), 4);
  EXPECT_STREQ(cpu4["type"].GetString(), "standard");
  EXPECT_EQ(t["cpus"][1]["numaNode"].GetInt(), 1);
  EXPECT_EQ(t["cores"].Size(), 17u);
  EXPECT_STREQ(t["cores"][0]["cpus"].GetString(), "4");
  EXPECT_EQ(t["l3Caches"].Size(), 2u);
  bool warned = false;
  for (const auto& w : doc["warnings"].GetArray()) {
    warned |= std::string(w.GetString()).find("in no NUMA node") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

TEST(GatherInfo, JsonCoresAndL3OnSmt4Power7) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = testing::ExtractCorpusMachine(shared, "ibm-power7-8numa-smt4");
  ASSERT_THAT(tree, IsOk());
  const CommandRun r = Gather({"--sysfs-root", (*tree)->path(), "--format", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const rapidjson::Document doc = ParseJson(r.out);
  const auto& t = doc["topology"];
  EXPECT_STREQ(t["online"].GetString(), "0-255");
  EXPECT_EQ(t["threadsPerCore"].GetInt(), 4);
  EXPECT_EQ(t["cores"].Size(), 64u);
  EXPECT_STREQ(t["cores"][1]["cpus"].GetString(), "4-7");
  EXPECT_EQ(t["cores"][1]["id"].GetInt(), 4);
  EXPECT_EQ(t["l3Caches"].Size(), 64u);
  EXPECT_EQ(t["packages"].Size(), 1u);
  EXPECT_EQ(t["numaNodes"].Size(), 8u);
  EXPECT_EQ(t["numaNodes"][2]["id"].GetInt(), 4);
  EXPECT_EQ(t["numaNodes"][2]["distances"]["4"].GetInt(), 10);
  EXPECT_EQ(t["cpus"][255]["core"].GetInt(), 252);
  EXPECT_EQ(t["cpus"][255]["numaNode"].GetInt(), 13);
}

TEST(GatherInfo, YamlHasTheSameContract) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = testing::ExtractCorpusMachine(shared, "intel-raptorlake-i7-1370p-hybrid");
  ASSERT_THAT(tree, IsOk());
  const CommandRun r = Gather({"--sysfs-root", (*tree)->path()});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("---", 0), 0u);
  YAML::Node doc;
  try {
    doc = YAML::Load(r.out);
  } catch (const std::exception& e) {
    FAIL() << "YAML does not parse: " << e.what();
  }
  EXPECT_EQ(doc["layoutVersion"].as<std::string>(), "v1");
  const YAML::Node t = doc["topology"];
  EXPECT_EQ(t["online"].as<std::string>(), "0-19");
  EXPECT_TRUE(t["smtEnabled"].as<bool>());
  EXPECT_EQ(t["threadsPerCore"].as<int>(), 2);
  EXPECT_EQ(t["cores"].size(), 14u);
  EXPECT_EQ(t["cores"][0]["cpus"].as<std::string>(), "0-1");
  EXPECT_EQ(t["cores"][6]["cpus"].as<std::string>(), "12");  // a one-CPU list stays a string
  EXPECT_EQ(t["clusters"].size(), 8u);
  EXPECT_EQ(t["numaNodes"][0]["distances"]["0"].as<int>(), 10);
}

TEST(GatherInfo, SummaryIsReadable) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = testing::ExtractCorpusMachine(shared, "intel-harpertown-2s-buggy-numa");
  ASSERT_THAT(tree, IsOk());
  const CommandRun r = Gather({"--sysfs-root", (*tree)->path(), "--format", "summary"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("online 0-7 (8)"));
  EXPECT_THAT(r.out, HasSubstr("Packages  2"));
  EXPECT_THAT(r.out, HasSubstr("node1 overlaps CPUs of another node"));
}

// The report ends with the node map of dracpu-shm map: with the owners from a segment, or, when
// there is none, the topology with the owners unknown and the reason; --no-map leaves it out.
TEST(GatherInfo, IncludesTheNodeMap) {
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = testing::ExtractCorpusMachine(shared, "intel-skylake-sp-2s-ht-pci");
  ASSERT_THAT(tree, IsOk());
  shm::testing::TempDir dir;
  const std::string seg_path = dir.File(shm::SegmentFileName());
  auto seg = shm::Segment::Open(seg_path, shm::testing::TestOptions(shm::Role::kDraAgent));
  ASSERT_THAT(seg, IsOk());
  {
    Result<shm::WriteTransaction> txn = (*seg)->Begin();
    ASSERT_THAT(txn, IsOk());
    shm::TopologySummary topo{};
    topo.online = CpuSet::Range(0, 31);
    topo.allocatable = topo.online;
    ASSERT_THAT(txn->SetTopology(topo), IsOk());
    ASSERT_THAT(txn->UpsertClaim(shm::testing::TestClaim(1, CpuSet{8, 9, 24, 25})), IsOk());
  }
  const CommandRun r = Gather(
      {"--sysfs-root", (*tree)->path(), "--format", "json", "--no-pcie", "--shm-path", seg_path});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const rapidjson::Document doc = ParseJson(r.out);
  ASSERT_TRUE(doc.HasMember("nodeMap"));
  const std::string map = doc["nodeMap"].GetString();
  EXPECT_THAT(map, HasSubstr("┌─ socket 1 · NUMA node 1 · L3 1 ─"));
  EXPECT_THAT(map, HasSubstr("│ AA AA .. .. .. .. .. .."));
  EXPECT_THAT(map, HasSubstr("A  claim ns/claim-1  4 CPUs: 8-9,24-25"));
  EXPECT_THAT(map, ::testing::Not(HasSubstr("\x1b[")));

  const CommandRun none = Gather({"--sysfs-root", (*tree)->path(), "--format", "summary",
                                  "--shm-path", "/nonexistent/state.v1.shm"});
  ASSERT_EQ(none.code, kExitOk) << none.err;
  EXPECT_THAT(none.out, HasSubstr("Node map (dracpu-shm map)"));
  EXPECT_THAT(none.out, HasSubstr("?  unknown  32 CPUs: 0-31  no segment: owner unknown"));
  EXPECT_THAT(none.out, HasSubstr("note: no segment at /nonexistent/state.v1.shm (--shm-path)"));

  const CommandRun yaml = Gather({"--sysfs-root", (*tree)->path(), "--shm-path", seg_path});
  ASSERT_EQ(yaml.code, kExitOk) << yaml.err;
  EXPECT_EQ(YAML::Load(yaml.out)["nodeMap"].as<std::string>(), map);

  const CommandRun off = Gather({"--sysfs-root", (*tree)->path(), "--format", "json", "--no-map"});
  ASSERT_EQ(off.code, kExitOk) << off.err;
  EXPECT_FALSE(ParseJson(off.out).HasMember("nodeMap"));
}

// The running agent's ResourceSlice state, as its /debug/resourceslices serves it, appears in
// every format; an agent that cannot be reached is said, and is not a failure.
TEST(GatherInfo, ShowsTheAgentsResourceSliceState) {
  const std::string state =
      R"({"published":false,"rejected":true,"slices":0,"errors":[{"code":"422","reason":"Invalid",)"
      R"("field":"spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.default","message":)"
      R"("Required value: required when validRange is defined","request":"POST resourceslices",)"
      R"("count":3}],"shapeNotes":["pcieRoot left out of cpudevnuma001"],"server":{"version":)"
      R"("v1.36.0","features":{"DRAConsumableCapacity":{"state":"kept","evidence":"probe"}}}})";
  testing::LoopThread loop;
  auto server = loop.Call([&] {
    return HttpServer::Start(loop.loop(), "127.0.0.1:0",
                             {{"/debug/resourceslices", [&] {
                                 return HttpResponse{200, "application/json", state};
                               }}});
  });
  ASSERT_THAT(server, IsOk());
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());
  DRACPU_REQUIRE_SHARED_DIR(shared);
  auto tree = testing::ExtractCorpusMachine(shared, "intel-skylake-sp-2s-ht-pci");
  ASSERT_THAT(tree, IsOk());
  const CommandRun summary =
      Gather({"--sysfs-root", (*tree)->path(), "--format", "summary", "--agent", url});
  ASSERT_EQ(summary.code, kExitOk) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("REFUSED by the API server"));
  EXPECT_THAT(summary.out,
              HasSubstr("error: 422 Invalid: spec.devices[0].capacity[dra.cpu/cpu].requestPolicy."
                        "default: Required value: required when validRange is defined (3x)"));
  EXPECT_THAT(summary.out, HasSubstr("note: pcieRoot left out of cpudevnuma001"));
  EXPECT_THAT(summary.out, HasSubstr("server: v1.36.0, DRAConsumableCapacity kept"));
  const CommandRun json =
      Gather({"--sysfs-root", (*tree)->path(), "--format", "json", "--agent", url});
  ASSERT_EQ(json.code, kExitOk);
  rapidjson::Document doc = ParseJson(json.out);
  EXPECT_TRUE(doc["agent"]["resourceSlices"]["rejected"].GetBool());
  EXPECT_TRUE(doc.HasMember("topology"));
  const CommandRun yaml = Gather({"--sysfs-root", (*tree)->path(), "--agent=" + url});
  ASSERT_EQ(yaml.code, kExitOk);
  YAML::Node y = YAML::Load(yaml.out);
  EXPECT_EQ(y["agent"]["resourceSlices"]["errors"][0]["code"].as<std::string>(), "422");
  EXPECT_TRUE(y["topology"].IsMap());
  loop.Call([&] { (*server)->Stop(); });
  const CommandRun gone =
      Gather({"--sysfs-root", (*tree)->path(), "--format", "summary", "--agent", url});
  EXPECT_EQ(gone.code, kExitOk);
  EXPECT_THAT(gone.out, HasSubstr("not reachable"));
}

// A recorded node: an init process, a dracpu-dra-agent running a subcommand (skipped), and the
// agent itself, whose /proc/<pid>/root holds its config file and its sysfs overlay (2 CPUs on
// one core), over a host root without sys/.
std::unique_ptr<testing::SysfsFixture> RecordedNode() {
  auto f = testing::SysfsFixture::Create().value();
  const std::string nul(1, '\0');
  f->File("proc/1/cmdline", "/sbin/init" + nul);
  f->File("proc/4241/cmdline", "/usr/local/bin/dracpu-dra-agent" + nul + "gatherinfo" + nul);
  f->File("proc/4242/cmdline",
          "/usr/local/bin/dracpu-dra-agent" + nul + "--config=/etc/dracpu/config.yaml" + nul +
              "--bind-address=:9999" + nul + "--group-by" + nul + "socket" + nul + "--v=4" + nul);
  f->File("proc/4242/environ", "PATH=/usr/local/bin" + nul + "NODE_NAME=Node-X" + nul);
  f->File("proc/sys/kernel/hostname", "host-y\n");
  f->Symlink("proc/4242/root", f->root() + "/agent-root");
  f->File("agent-root/etc/dracpu/config.yaml",
          "cpuDeviceMode: individual\nreservedCPUs: \"0\"\nsysfsOverlay: /etc/overlay.yaml\n"
          "fullPCPUsOnly: true\n");
  f->File("agent-root/etc/overlay.yaml",
          "/sys/devices/system/cpu/online: \"0-1\\n\"\n"
          "/sys/devices/system/cpu/cpu0/topology/physical_package_id: \"0\\n\"\n"
          "/sys/devices/system/cpu/cpu0/topology/core_id: \"0\\n\"\n"
          "/sys/devices/system/cpu/cpu1/topology/physical_package_id: \"0\\n\"\n"
          "/sys/devices/system/cpu/cpu1/topology/core_id: \"0\\n\"\n");
  EXPECT_THAT(f->status(), IsOk());
  return f;
}

TEST(GatherInfo, ReportsTheRunningAgentsEffectiveConfigAndReadsItsOverlay) {
  auto node = RecordedNode();
  const CommandRun r = Gather({"--format", "json"}, node->root());
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const rapidjson::Document doc = ParseJson(r.out);
  ASSERT_TRUE(doc.HasMember("driverConfig")) << r.err;
  const auto& c = doc["driverConfig"];
  EXPECT_EQ(c["driverPid"].GetInt(), 4242);
  EXPECT_STREQ(c["cpuDeviceMode"].GetString(), "individual");  // its file
  EXPECT_STREQ(c["groupBy"].GetString(), "socket");            // its flag, over the file
  EXPECT_STREQ(c["reservedCPUs"].GetString(), "0");
  EXPECT_STREQ(c["bindAddress"].GetString(), ":9999");
  EXPECT_STREQ(c["kubeletRootDir"].GetString(), "/var/lib/kubelet");
  EXPECT_FALSE(c["exposePCIeRoots"].GetBool());
  EXPECT_STREQ(c["sysfsOverlay"].GetString(), "/etc/overlay.yaml");
  EXPECT_TRUE(c["fullPCPUsOnly"].GetBool());
  EXPECT_STREQ(c["nodeName"].GetString(), "node-x");  // its $NODE_NAME
  // The topology is the overlay's, read through the agent's root.
  EXPECT_STREQ(doc["topology"]["online"].GetString(), "0-1");
  EXPECT_EQ(doc["cpuDetails"]["topology"]["numCores"].GetInt(), 1);
  EXPECT_EQ(doc["cpuDetails"]["cpus"][0]["sibling"].GetInt(), 1);
  EXPECT_FALSE(doc["kubeletCpuManager"]["found"].GetBool());
  EXPECT_STREQ(doc["kubeletCpuManager"]["conflict"].GetString(), "");
  // The kubelet's static CPU Manager on that node is reported, from the agent's kubelet root.
  node->File("agent-root/var/lib/kubelet/cpu_manager_state",
             R"({"policyName":"static","defaultCpuSet":"0-1","checksum":1})");
  const CommandRun conflict = Gather({"--format", "json"}, node->root());
  const rapidjson::Document with = ParseJson(conflict.out);
  EXPECT_TRUE(with["kubeletCpuManager"]["found"].GetBool());
  EXPECT_STREQ(with["kubeletCpuManager"]["policyName"].GetString(), "static");
  EXPECT_THAT(with["kubeletCpuManager"]["conflict"].GetString(), HasSubstr("policy static"));
  EXPECT_THAT(Gather({"--format=summary"}, node->root()).out, HasSubstr("CONFLICT  the kubelet's"));
  // An explicit --sysfs-root is read as it is, without the agent's overlay.
  const CommandRun own =
      Gather({"--format=json", "--sysfs-root=" + node->root() + "/none"}, node->root());
  EXPECT_EQ(own.code, kExitFailed);
}

TEST(GatherInfo, AnUnreadableAgentConfigIsReportedNotFatal) {
  auto node = RecordedNode();
  node->File("agent-root/etc/dracpu/config.yaml", "groupBy: numa\n");
  node->File("agent-root/etc/overlay.yaml", "/sys/devices/system/cpu/online: \"0\\n\"\n");
  const CommandRun r = Gather({"--format", "json"}, node->root());
  EXPECT_THAT(r.err, HasSubstr("pid 4242: its configuration"));
  EXPECT_THAT(r.err, HasSubstr("shown without the --config file"));
  ASSERT_EQ(r.code, kExitFailed) << "no overlay, and the host root has no sys/: " << r.out;
}

TEST(GatherInfo, OutputDirWritesTheReferencesFileName) {
  auto node = RecordedNode();
  const std::string dir = node->root() + "/reports/new";
  const CommandRun r = Gather({"--output-dir", dir}, node->root());
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(std::regex_match(files[0].filename().string(),
                               std::regex(R"(dracpu-gatherinfo-\d{8}-\d{6}-\d+\.yaml)")))
      << files[0];
  EXPECT_THAT(r.err, HasSubstr(files[0].string()));
  struct stat st;
  ASSERT_EQ(::stat(files[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(files[0]);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "---");
  const CommandRun both = Gather({"--stdout", "--output-dir", dir}, node->root());
  EXPECT_EQ(both.code, kExitUsage);
  EXPECT_THAT(both.err, HasSubstr("--stdout and --output-dir cannot be used together"));
  const CommandRun stdout_run = Gather({"-stdout", "--format=summary"}, node->root());
  EXPECT_EQ(stdout_run.code, kExitOk) << stdout_run.err;
  EXPECT_THAT(
      stdout_run.out,
      HasSubstr("Driver    pid 4242, reservedCPUs 0, cpuDeviceMode individual, groupBy socket"));
}

TEST(GatherInfo, AsDracpuGatherinfoItWritesATemporaryFileByDefault) {
  auto node = RecordedNode();
  const std::string tmp = node->root() + "/tmp";
  std::filesystem::create_directories(tmp);
  const CommandRun r = Gather({}, node->root(), /*legacy=*/true, tmp);
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(tmp)) {
    names.push_back(e.path().filename().string());
  }
  ASSERT_EQ(names.size(), 1u);
  EXPECT_TRUE(std::regex_match(names[0], std::regex(R"(dracpu-gatherinfo-.{6}\.yaml)")))
      << names[0];
  const CommandRun printed = Gather({"--stdout"}, node->root(), /*legacy=*/true, tmp);
  ASSERT_EQ(printed.code, kExitOk) << printed.err;
  YAML::Node doc = YAML::Load(printed.out);
  EXPECT_EQ(doc["layoutVersion"].as<std::string>(), "v1");
  EXPECT_FALSE(doc["cpuDetails"]["cpus"].IsNull());
  EXPECT_EQ(doc["driverConfig"]["cpuDeviceMode"].as<std::string>(), "individual");
}

}  // namespace
}  // namespace dracpu::dra
