#include "dra-agent/agent/kubelet_cpu_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::dra {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// What the kubelet writes (pkg/kubelet/cm/cpumanager/state, checkpoint v2).
constexpr char kStatic[] =
    R"({"policyName":"static","defaultCpuSet":"0-1,6-15","entries":{"8c5b":{"app":"2-3"},)"
    R"("9d1e":{"db":"4-5","side":"16"}},"checksum":2941032839})";
constexpr char kNone[] = R"({"policyName":"none","defaultCpuSet":"","checksum":1353318690})";

TEST(KubeletCpuManager, ParsesTheKubeletsCheckpoint) {
  auto s = ParseKubeletCpuManagerState(kStatic, "/var/lib/kubelet/cpu_manager_state");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(s->policy, "static");
  EXPECT_EQ(s->default_cpu_set.ToListString(), "0-1,6-15");
  EXPECT_EQ(s->exclusive_cpus.ToListString(), "2-5,16");
  EXPECT_EQ(s->exclusive_containers, 3);
  auto n = ParseKubeletCpuManagerState(kNone, "f");
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->policy, "none");
  EXPECT_THAT(ParseKubeletCpuManagerState("garbage", "f"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("f: not a JSON object")));
  EXPECT_THAT(ParseKubeletCpuManagerState(R"({"entries":{}})", "f"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("no policyName")));
}

TEST(KubeletCpuManager, OnlyAStaticPolicyConflicts) {
  testing::TempDir dir;
  auto fs = NewPosixFileSystem(dir.path()).value();
  const auto state = [&] { return ReadKubeletCpuManagerState(*fs, "/var/lib/kubelet"); };
  EXPECT_THAT(state(), StatusIs(StatusCode::kNotFound));
  EXPECT_EQ(KubeletCpuManagerConflict(state()), "");  // no file: no kubelet CPU Manager state
  std::filesystem::create_directories(dir.path() + "/var/lib/kubelet");
  std::ofstream(dir.path() + "/var/lib/kubelet/cpu_manager_state") << kNone;
  EXPECT_EQ(KubeletCpuManagerConflict(state()), "");
  std::ofstream(dir.path() + "/var/lib/kubelet/cpu_manager_state") << kStatic;
  EXPECT_THAT(
      KubeletCpuManagerConflict(state()),
      AllOf(HasSubstr("policy static"), HasSubstr("/var/lib/kubelet/cpu_manager_state"),
            HasSubstr("CPUs 2-5,16 for 3 container(s)"), HasSubstr("cpuManagerPolicy to none")));
}

}  // namespace
}  // namespace dracpu::dra
