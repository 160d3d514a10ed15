#include "tests/sim/runtime/cgroup_cpusets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::sim {
namespace {

using ::dracpu::testing::TempDir;
using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// A plain directory standing in for a cgroup v1 cpuset parent: the writes land in files.
TEST(CgroupCpusetsTest, WritesMemsThenCpusThenTheProcessAndRemovesTheGroup) {
  TempDir dir("dracpu-cg");
  std::ofstream(dir.File("cpuset.effective_mems")) << "0-1\n";
  auto cg = CgroupCpusets::Open(dir.path());
  ASSERT_THAT(cg, IsOk());
  ASSERT_THAT(cg->Apply("c1", 4242, "2-3", ""), IsOk());
  EXPECT_EQ(Read(dir.File("c1/cpuset.mems")), "0-1");  // the parent's, as v1 requires
  EXPECT_EQ(Read(dir.File("c1/cpuset.cpus")), "2-3");
  EXPECT_EQ(Read(dir.File("c1/cgroup.procs")), "4242");
  ASSERT_THAT(cg->Apply("c1", 4242, "4-5", "1"), IsOk());  // an update rewrites in place
  EXPECT_EQ(Read(dir.File("c1/cpuset.cpus")), "4-5");
  EXPECT_EQ(Read(dir.File("c1/cpuset.mems")), "1");
  ASSERT_THAT(cg->Release("c1"), IsOk());
  EXPECT_FALSE(std::filesystem::exists(dir.File("c1")));
  EXPECT_THAT(cg->Release("never-made"), IsOk());
}

TEST(CgroupCpusetsTest, TheDestructorRemovesEveryGroupItMade) {
  TempDir dir("dracpu-cg");
  {
    auto cg = CgroupCpusets::Open(dir.path());
    ASSERT_THAT(cg, IsOk());
    ASSERT_THAT(cg->Apply("a", 0, "0", "0"), IsOk());
    ASSERT_THAT(cg->Apply("b", 0, "1", "0"), IsOk());
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("a")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("b")));
}

TEST(CgroupCpusetsTest, RefusesBadParentsAndIdsThatAreNotOneName) {
  EXPECT_THAT(CgroupCpusets::Open("/nonexistent/dracpu").status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a directory")));
  TempDir dir("dracpu-cg");
  auto cg = CgroupCpusets::Open(dir.path());
  ASSERT_THAT(cg, IsOk());
  EXPECT_THAT(cg->Apply("../escape", 0, "0", "0"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("cannot name a cgroup")));
  EXPECT_THAT(cg->Apply("", 0, "0", "0"), StatusIs(StatusCode::kInvalidArgument));
}

// On a real cgroup v1 cpuset hierarchy (root, as on the demo machine): a child process ends up
// with exactly the cgroup's CPUs in its affinity, and the group is gone after Release.
TEST(CgroupCpusetsTest, PinsARealProcessWhenRootOnACpusetHierarchy) {
  const std::string root = "/sys/fs/cgroup/cpuset";
  if (::geteuid() != 0 || ::access((root + "/cpuset.cpus").c_str(), W_OK) != 0) {
    GTEST_SKIP() << "needs root and a writable cgroup v1 cpuset hierarchy at " << root;
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  std::optional<CgroupCpusets> cg;
  {
    auto opened = CgroupCpusets::Open(root);
    ASSERT_THAT(opened, IsOk());
    cg.emplace(std::move(opened).value());
  }
  const std::string id = "dracpu-cg-test-" + std::to_string(::getpid());
  ASSERT_THAT(cg->Apply(id, child, "0", ""), IsOk());
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(child, sizeof set, &set), 0);
  EXPECT_EQ(CPU_COUNT(&set), 1);
  EXPECT_TRUE(CPU_ISSET(0, &set));
  EXPECT_THAT(cg->Release(id), IsOk());
  EXPECT_FALSE(std::filesystem::exists(root + "/" + id));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace dracpu::sim
