// dracpu-shm (exec'd as operators run it): dump as a table and as JSON, --watch, verify passing
// and failing, and its exit codes for a missing file and bad flags (map's too; the map itself:
// shm_map_tool_test.cc).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm-schema/checksum.h"
#include "shm-schema/segment.h"
#include "tests/integration/shm_test_support.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::shm {
namespace {

using ::testing::HasSubstr;
using testing::RunTool;
using testing::TempDir;
using testing::TestOptions;
using testing::Uid;

class ShmToolTest : public ::testing::Test {
 protected:
  // A node with 16 CPUs (0 reserved), two claims, one exclusive and one shared container.
  void SetUp() override {
    Result<std::unique_ptr<Segment>> dra = Segment::Open(path_, TestOptions(Role::kDraAgent));
    ASSERT_THAT(dra, IsOk());
    dra_ = std::move(dra).value();
    Result<std::unique_ptr<Segment>> nri = Segment::Open(path_, TestOptions(Role::kNriAgent));
    ASSERT_THAT(nri, IsOk());
    nri_ = std::move(nri).value();
    {
      Result<WriteTransaction> txn = dra_->Begin();
      ASSERT_THAT(txn, IsOk());
      TopologySummary topo{};
      topo.online = CpuSet::Range(0, 15);
      topo.reserved = CpuSet{0};
      topo.allocatable = CpuSet::Range(1, 15);
      topo.numa_nodes = 1;
      topo.sockets = 1;
      ASSERT_THAT(txn->SetTopology(topo), IsOk());
      ConfigSummary config{};
      config.flags = kConfigStrictCpuReservation;
      config.min_shared_cpus = 1;
      ASSERT_THAT(txn->SetConfig(config), IsOk());
      ASSERT_THAT(txn->UpsertClaim(testing::TestClaim(1, CpuSet{2, 3})), IsOk());
      ASSERT_THAT(txn->UpsertClaim(testing::TestClaim(2, CpuSet{4})), IsOk());
    }
    Result<WriteTransaction> txn = nri_->Begin();
    ASSERT_THAT(txn, IsOk());
    ContainerSpec ex;
    ex.id = "0123456789abcdef0123";
    ex.pod_namespace = "team";
    ex.pod_name = "trainer";
    ex.name = "main";
    ex.kind = ContainerKind::kExclusive;
    ex.claim_uids = {Uid(1)};
    ex.cpus = CpuSet{2, 3};
    ASSERT_THAT(txn->UpsertContainer(ex), IsOk());
    ContainerSpec sh;
    sh.id = "fedcba9876543210";
    sh.pod_namespace = "kube-system";
    sh.pod_name = "dns";
    sh.name = "coredns";
    sh.kind = ContainerKind::kShared;
    sh.cpus = CpuSet::Range(5, 15);
    ASSERT_THAT(txn->UpsertContainer(sh), IsOk());
    ASSERT_THAT(txn->SetSharedPool(CpuSet{1} | CpuSet::Range(5, 15)), IsOk());
  }

  TempDir dir_;
  std::string path_ = dir_.File(SegmentFileName());
  std::unique_ptr<Segment> dra_;
  std::unique_ptr<Segment> nri_;
};

TEST_F(ShmToolTest, DumpShowsAgentsCpusClaimsAndContainers) {
  const testing::ToolResult r = RunTool({"dump", "--path", path_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("layout v1.0"));
  EXPECT_THAT(r.out, HasSubstr("node node-a"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("dra-agent +" + std::to_string(::getpid()) +
                                              " .* live, heartbeat"));
  EXPECT_THAT(r.out,
              ::testing::ContainsRegex("nri-agent +" + std::to_string(::getpid()) + " .* live"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("allocatable +15 +1-15"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("reserved +1 +0\n"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("shared pool +12 +1,5-15"));
  EXPECT_THAT(r.out, HasSubstr("CLAIMS (2 of 64)"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex(Uid(1) + " +ns/claim-1 +prepared +2-3 +0 "));
  EXPECT_THAT(r.out, HasSubstr("CONTAINERS (2 of 64)"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "0123456789abcdef +team/trainer/main +exclusive +2-3 +" + Uid(1)));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("kube-system/dns/coredns +shared +5-15"));
}

TEST_F(ShmToolTest, DumpJson) {
  const testing::ToolResult r = RunTool({"dump", "--json", "--path", path_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.out;
  EXPECT_EQ(d["layoutMajor"].GetUint(), kLayoutMajor);
  EXPECT_TRUE(d["consistent"].GetBool());
  EXPECT_STREQ(d["agents"][0]["role"].GetString(), "dra-agent");
  EXPECT_TRUE(d["agents"][0]["live"].GetBool());
  EXPECT_STREQ(d["cpus"]["sharedPool"].GetString(), "1,5-15");
  ASSERT_EQ(d["claims"].Size(), 2u);
  EXPECT_STREQ(d["claims"][0]["cpus"].GetString(), "2-3");
  EXPECT_STREQ(d["claims"][0]["state"].GetString(), "prepared");
  ASSERT_EQ(d["containers"].Size(), 2u);
  EXPECT_STREQ(d["containers"][0]["kind"].GetString(), "exclusive");
  EXPECT_STREQ(d["containers"][0]["claims"][0].GetString(), Uid(1).c_str());
}

TEST_F(ShmToolTest, DumpWatchPrintsAgainOnEveryChange) {
  // Start the tool, wait for its first table, then change the segment: it must print again.
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const std::string tool = testing::ToolPath();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::execl(tool.c_str(), tool.c_str(), "dump", "--watch", "--count", "2", "--path", path_.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  testing::ChildGuard guard(pid);
  ::close(out[1]);
  std::string text;
  char buf[4096];
  bool wrote = false;
  for (;;) {
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (!wrote && text.find("CONTAINERS (") != std::string::npos) {
      Result<WriteTransaction> txn = dra_->Begin();
      ASSERT_THAT(txn, IsOk());
      ASSERT_THAT(txn->UpsertClaim(testing::TestClaim(3, CpuSet{9})), IsOk());
      txn->Commit();
      wrote = true;
    }
  }
  ::close(out[0]);
  const int status = guard.Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(wrote);
  const size_t first = text.find("CLAIMS (2 of 64)");
  const size_t second = text.find("CLAIMS (3 of 64)");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_LT(first, second);
  EXPECT_THAT(text, HasSubstr("----\n"));
}

TEST_F(ShmToolTest, VerifyPassesOnAConsistentSegment) {
  const testing::ToolResult r = RunTool({"verify", "--path", path_});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("every invariant holds"));
}

TEST_F(ShmToolTest, VerifyListsEachViolation) {
  {
    Result<WriteTransaction> txn = dra_->Begin();
    ASSERT_THAT(txn, IsOk());
    // Claim 2 now overlaps claim 1, and claim 1 moved away from its container.
    ASSERT_THAT(txn->UpsertClaim(testing::TestClaim(1, CpuSet{3, 4})), IsOk());
  }
  const testing::ToolResult r = RunTool({"verify", "--path", path_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("FAIL " + path_ + ": 3 violations"));
  EXPECT_THAT(r.out, HasSubstr("claim " + Uid(2) + " (ns/claim-2): CPUs 4 are held by claim " +
                               Uid(1) + " (ns/claim-1)"));
  EXPECT_THAT(r.out, HasSubstr("shared pool is 1,5-15 but allocatable minus claims is 1-2,5-15"));
  EXPECT_THAT(r.out,
              HasSubstr("container 0123456789abcdef0123 (team/trainer/main): exclusive CPUs 2-3 "
                        "differ from its claims' 3-4"));
}

TEST_F(ShmToolTest, VerifyReportsACorruptSegment) {
  dra_.reset();
  nri_.reset();
  {
    Result<ShmFile> f = ShmFile::Open(path_, true);
    ASSERT_THAT(f, IsOk());
    ASSERT_THAT(f->Map(), IsOk());
    static_cast<SegmentHeader*>(f->data())->magic = 7;
  }
  const testing::ToolResult r = RunTool({"verify", "--path", path_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, HasSubstr("bad magic 0x0000000000000007"));
}

struct UsageCase {
  const char* name;
  std::vector<std::string> args;
  int exit_code;
  const char* err;
};

class ShmToolUsageTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(ShmToolUsageTest, ExitCodeAndMessage) {
  const testing::ToolResult r = RunTool(GetParam().args);
  EXPECT_EQ(r.exit_code, GetParam().exit_code) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(GetParam().err));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ShmToolUsageTest,
    ::testing::Values(
        UsageCase{"NoCommand", {}, 2, "missing command"},
        UsageCase{"UnknownCommand", {"show"}, 2, "unknown command \"show\""},
        UsageCase{"UnknownFlag", {"dump", "--yaml"}, 2, "unknown flag \"--yaml\" for dump"},
        UsageCase{"VerifyHasNoJson", {"verify", "--json"}, 2, "unknown flag \"--json\" for verify"},
        UsageCase{"PathWithoutValue", {"dump", "--path"}, 2, "--path needs a value"},
        UsageCase{"CountWithoutWatch",
                  {"dump", "--count", "2", "--path", "/x"},
                  2,
                  "--count needs --watch"},
        UsageCase{"MissingFileDump",
                  {"dump", "--path", "/nonexistent/state.v1.shm"},
                  2,
                  "no segment at /nonexistent/state.v1.shm"},
        UsageCase{"MissingFileVerify",
                  {"verify", "--path", "/nonexistent/state.v1.shm"},
                  2,
                  "no segment at /nonexistent/state.v1.shm"},
        UsageCase{"MapBadFormat", {"map", "--format", "png"}, 2, "--format must be text or svg"},
        UsageCase{"MapBadView", {"map", "--view=cpus"}, 2, "--view must be auto, threads or cores"},
        UsageCase{"MapBadColor", {"map", "--color", "yes"}, 2, "--color must be auto, always"},
        UsageCase{"MapNarrowWidth", {"map", "--width", "20"}, 2, "--width must be a number"},
        UsageCase{"MapWidthNeedsValue", {"map", "--width"}, 2, "--width needs a value"},
        UsageCase{"MapEmptySysfsRoot", {"map", "--sysfs-root="}, 2, "--sysfs-root is empty"},
        UsageCase{"DumpHasNoView", {"dump", "--view", "cores"}, 2, "unknown flag \"--view\""},
        UsageCase{"MissingFileMap",
                  {"map", "--path", "/nonexistent/state.v1.shm"},
                  2,
                  "no segment at /nonexistent/state.v1.shm"}),
    [](const ::testing::TestParamInfo<UsageCase>& info) { return info.param.name; });

}  // namespace
}  // namespace dracpu::shm
