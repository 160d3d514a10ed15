#include "shm-schema/cpu_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "shm-schema/records.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::shm {
namespace {

using ::testing::HasSubstr;

ClaimEntry Claim(const std::string& uid, CpuSet cpus, ClaimState state = ClaimState::kPrepared) {
  ClaimSpec s;
  s.uid = uid;
  s.namespace_ = "ns";
  s.name = "c-" + uid;
  s.state = state;
  s.cpus = cpus;
  return *EncodeClaim(s);
}

// A node of CPUs 0-7, CPU 0 reserved, floor 2, claim "a" holding {1, 2}; `online` and strictness
// vary per case.
struct AdmitCase {
  const char* name;
  CpuSet online;
  bool strict;
  CpuSet cpus;
  StatusCode code;
  const char* message;  // substring; "" for OK
};

class AdmitTest : public ::testing::TestWithParam<AdmitCase> {};

TEST_P(AdmitTest, ChecksOverlapAllocatableOnlineAndFloorInThatOrder) {
  const AdmitCase& c = GetParam();
  const CpuAdmission rule({CpuSet::Range(1, 7), CpuSet{0}, c.online, c.strict, 2});
  const std::vector<ClaimEntry> claims = {Claim("a", CpuSet{1, 2})};
  const Status st = rule.Admit(c.cpus, claims);
  if (c.code == StatusCode::kOk) {
    EXPECT_THAT(st, IsOk());
  } else {
    EXPECT_THAT(st, StatusIs(c.code, HasSubstr(c.message)));
  }
}

const CpuSet kAll = CpuSet::Range(0, 7);
const CpuSet kFiveToSevenOffline = CpuSet::Range(0, 4);

INSTANTIATE_TEST_SUITE_P(
    Cases, AdmitTest,
    ::testing::Values(
        AdmitCase{"Fits", kAll, true, CpuSet{3, 4}, StatusCode::kOk, ""},
        AdmitCase{"Empty", kAll, true, CpuSet{}, StatusCode::kInvalidArgument, "no CPUs"},
        AdmitCase{"HeldByAnother", kAll, true, CpuSet{2, 3}, StatusCode::kFailedPrecondition,
                  "CPUs 2 are held by claim a (ns/c-a)"},
        AdmitCase{"Reserved", kAll, true, CpuSet{0}, StatusCode::kFailedPrecondition,
                  "CPUs 0 are not allocatable"},
        AdmitCase{"NotOnTheNode", kAll, true, CpuSet{9}, StatusCode::kFailedPrecondition,
                  "CPUs 9 are not allocatable"},
        AdmitCase{"Offline", kFiveToSevenOffline, true, CpuSet{6}, StatusCode::kUnavailable,
                  "CPUs 6 are offline"},
        AdmitCase{"Floor", kAll, true, CpuSet::Range(3, 6), StatusCode::kResourceExhausted,
                  "granting CPUs 3-6 would leave 1 CPUs in the shared pool, below "
                  "minSharedCPUs 2"},
        // The reserved CPU 0 is shared when reservation is not strict: it counts to the floor.
        AdmitCase{"FloorWithReservedShared", kAll, false, CpuSet::Range(3, 6), StatusCode::kOk, ""},
        // CPUs 5-7 went offline: the online pool is {3, 4}, so 3 alone leaves 1 CPU.
        AdmitCase{"HotplugBelowTheFloor", kFiveToSevenOffline, true, CpuSet{3},
                  StatusCode::kResourceExhausted,
                  "granting CPUs 3 would leave 1 CPUs in the shared pool, below minSharedCPUs 2"},
        // Online not known (topology not read): no online step.
        AdmitCase{"OnlineUnknown", CpuSet{}, true, CpuSet{6}, StatusCode::kOk, ""}),
    [](const ::testing::TestParamInfo<AdmitCase>& info) { return info.param.name; });

TEST(CpuAdmissionTest, TheFloorIsNeverBelowOne) {
  EXPECT_EQ(CpuAdmission({CpuSet::Range(0, 3), {}, {}, true, 0}).floor(), 1u);
  EXPECT_EQ(CpuAdmission({CpuSet::Range(0, 3), {}, {}, true, 3}).floor(), 3u);
  const std::vector<ClaimEntry> none;
  EXPECT_THAT(CpuAdmission({CpuSet::Range(0, 3), {}, {}, true, 0}).Admit(CpuSet::Range(0, 3), none),
              StatusIs(StatusCode::kResourceExhausted, HasSubstr("below minSharedCPUs 1")));
}

TEST(CpuAdmissionTest, TheClaimItselfDoesNotCountAndTheFloorNoteIsSaid) {
  const CpuAdmission rule({CpuSet::Range(1, 7), CpuSet{0}, CpuSet::Range(0, 7), true, 2});
  const std::vector<ClaimEntry> claims = {Claim("a", CpuSet{1, 2}),
                                          Claim("b", CpuSet{3, 4}, ClaimState::kReleasing)};
  EXPECT_THAT(rule.Admit(CpuSet{3, 4}, claims, "b"), IsOk());
  EXPECT_THAT(rule.Admit(CpuSet::Range(3, 6), claims, "b", "x allocated whole"),
              StatusIs(StatusCode::kResourceExhausted,
                       HasSubstr("below minSharedCPUs 2 (x allocated whole)")));
}

TEST(CpuAdmissionTest, SharedPoolAndGrantableFollowTheOnlineCpus) {
  CpuAdmission::Inputs in{CpuSet::Range(1, 7), CpuSet{0}, CpuSet::Range(0, 7), true, 1};
  const CpuSet claimed{2, 3};
  EXPECT_EQ(CpuAdmission(in).SharedPool(claimed), (CpuSet{1, 4, 5, 6, 7}));
  EXPECT_EQ(CpuAdmission(in).Grantable(claimed), (CpuSet{1, 4, 5, 6, 7}));
  in.strict_cpu_reservation = false;
  EXPECT_EQ(CpuAdmission(in).SharedPool(claimed), (CpuSet{0, 1, 4, 5, 6, 7}));
  EXPECT_EQ(CpuAdmission(in).Grantable(claimed), (CpuSet{1, 4, 5, 6, 7}))
      << "reserved CPUs are shared, never granted";
  in.online = CpuSet{0, 1, 2, 3, 4};
  EXPECT_EQ(CpuAdmission(in).SharedPool(claimed), (CpuSet{0, 1, 4}));
  EXPECT_EQ(CpuAdmission(in).Grantable(claimed), (CpuSet{1, 4}));
}

TEST(CpuAdmissionTest, FromRecordsReadsTheTopologyAndConfigSummaries) {
  TopologySummary topo{};
  topo.online = CpuSet{0, 1, 2, 3};
  topo.reserved = CpuSet{0};
  topo.allocatable = CpuSet::Range(1, 7);
  ConfigSummary config{};
  config.min_shared_cpus = 3;
  const CpuAdmission rule = CpuAdmission::FromRecords(topo, config);
  EXPECT_FALSE(rule.inputs().strict_cpu_reservation);
  EXPECT_EQ(rule.floor(), 3u);
  const std::vector<ClaimEntry> claims = {Claim("a", CpuSet{1})};
  EXPECT_EQ(rule.SharedPool(claims), (CpuSet{0, 2, 3}));
  EXPECT_EQ(ComputeSharedPool(topo, config, claims), (CpuSet{0, 2, 3}));
}

// A claim already granted keeps its CPUs through a hotplug and a pool below the floor; it is
// invalid only when another claim holds one of them or one is not allocatable.
TEST(CpuAdmissionTest, CheckGrantedIgnoresOnlineAndFloor) {
  const CpuAdmission rule({CpuSet::Range(1, 7), CpuSet{0}, CpuSet::Range(0, 2), true, 6});
  const std::vector<ClaimEntry> claims = {Claim("a", CpuSet{1, 2})};
  EXPECT_THAT(rule.CheckGranted(CpuSet{3, 4, 5}, claims), IsOk());  // offline, pool empty
  EXPECT_THAT(rule.Admit(CpuSet{3, 4, 5}, claims), StatusIs(StatusCode::kUnavailable));
  EXPECT_THAT(rule.CheckGranted(CpuSet{2, 3}, claims),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("held by claim a")));
  EXPECT_THAT(rule.CheckGranted(CpuSet{2, 3}, claims, "a"), IsOk());
  EXPECT_THAT(rule.CheckGranted(CpuSet{0, 3}, claims),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("CPUs 0 are not allocatable")));
}

}  // namespace
}  // namespace dracpu::shm
