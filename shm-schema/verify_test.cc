#include "shm-schema/verify.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "shm-schema/checksum.h"

namespace dracpu::shm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

ClaimEntry Claim(const std::string& uid, CpuSet cpus) {
  ClaimSpec s;
  s.uid = uid;
  s.namespace_ = "ns";
  s.name = uid;
  s.state = ClaimState::kPrepared;
  s.cpus = cpus;
  ClaimEntry e = *EncodeClaim(s);
  e.checksum = RecordChecksum(e);
  return e;
}

ContainerEntry Container(const std::string& id, ContainerKind kind, std::vector<std::string> claims,
                         CpuSet cpus) {
  ContainerSpec s;
  s.id = id;
  s.pod_namespace = "ns";
  s.pod_name = "pod";
  s.name = id;
  s.kind = kind;
  s.claim_uids = std::move(claims);
  s.cpus = cpus;
  ContainerEntry e = *EncodeContainer(s);
  e.checksum = RecordChecksum(e);
  return e;
}

// A consistent node: CPUs 0-7, CPU 0 reserved (strict), claims a={1,2} b={3}, pool {4-7}.
Snapshot Good() {
  Snapshot s;
  s.generation = 10;
  s.config.flags = kConfigStrictCpuReservation;
  s.config.updated_time_ns = 1;
  s.config.checksum = RecordChecksum(s.config);
  s.topology.online = CpuSet::Range(0, 7);
  s.topology.reserved = CpuSet{0};
  s.topology.allocatable = CpuSet::Range(1, 7);
  s.topology.updated_time_ns = 1;
  s.topology.checksum = RecordChecksum(s.topology);
  s.shared_pool.cpus = CpuSet::Range(4, 7);
  s.shared_pool.updated_time_ns = 1;
  s.shared_pool.checksum = RecordChecksum(s.shared_pool);
  s.claims = {Claim("a", CpuSet{1, 2}), Claim("b", CpuSet{3})};
  s.containers = {Container("c1", ContainerKind::kExclusive, {"a"}, CpuSet{1, 2}),
                  Container("c2", ContainerKind::kShared, {}, CpuSet::Range(4, 7))};
  return s;
}

void SetPool(Snapshot& s, CpuSet cpus) {
  s.shared_pool.cpus = cpus;
  s.shared_pool.checksum = RecordChecksum(s.shared_pool);
}

struct Case {
  const char* name;
  std::function<void(Snapshot&)> mutate;
  const char* violation;  // nullptr: none
};

class VerifyTest : public ::testing::TestWithParam<Case> {};

TEST_P(VerifyTest, ReportsTheViolation) {
  Snapshot s = Good();
  GetParam().mutate(s);
  const VerifyResult r = VerifySnapshot(s);
  if (GetParam().violation == nullptr) {
    EXPECT_THAT(r.violations, IsEmpty());
  } else {
    EXPECT_THAT(r.violations, ElementsAre(HasSubstr(GetParam().violation)));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, VerifyTest,
    ::testing::Values(
        Case{"Good", [](Snapshot&) {}, nullptr},
        Case{"OddGeneration", [](Snapshot& s) { s.generation = 11; }, "generation 11 is odd"},
        Case{"Torn", [](Snapshot& s) { s.consistent = false; }, "no consistent snapshot"},
        Case{"ClaimChecksum",
             [](Snapshot& s) {
               s.claims[1].cpus.Set(3);
               s.claims[1].name[0] = 'x';
             },
             "claims[1] claim b (ns/x): checksum mismatch"},  // changed without a new checksum
        Case{"CpuInTwoClaims",
             [](Snapshot& s) {
               s.claims[1] = Claim("b", CpuSet{2, 3});
               SetPool(s, CpuSet::Range(4, 7));
             },
             "claim b (ns/b): CPUs 2 are held by claim a (ns/a)"},
        Case{"CpuInTwoClaimsBeforeTopology",
             [](Snapshot& s) {
               s.claims[1] = Claim("b", CpuSet{2, 3});
               s.topology = {};
             },
             "claim b (ns/b): CPUs 2 are held by claim a (ns/a)"},
        // A CPU that went offline under a claim: the claim keeps it (CpuAdmission::CheckGranted).
        Case{"ClaimOnOfflineCpuStaysValid",
             [](Snapshot& s) {
               s.topology.online = CpuSet::Range(0, 7) - CpuSet{3};
               s.topology.checksum = RecordChecksum(s.topology);
             },
             nullptr},
        Case{"ClaimOutsideAllocatable",
             [](Snapshot& s) {
               s.claims[1] = Claim("b", CpuSet{0, 3});
             },
             "claim b (ns/b): CPUs 0 are not allocatable"},
        Case{"PoolNotAllocatableMinusClaims", [](Snapshot& s) { SetPool(s, CpuSet::Range(3, 7)); },
             "shared pool is 3-7 but allocatable minus claims is 4-7 (extra: 3, missing: )"},
        Case{"PoolChecksum", [](Snapshot& s) { s.shared_pool.updated_time_ns = 2; },
             "shared pool: checksum mismatch"},
        Case{"NonStrictReservedJoinsPool",
             [](Snapshot& s) {
               s.config.flags = 0;
               s.config.checksum = RecordChecksum(s.config);
             },
             "missing: 0"},
        Case{"ExclusiveCpusDiffer",
             [](Snapshot& s) {
               s.containers[0] = Container("c1", ContainerKind::kExclusive, {"a"}, CpuSet{1});
             },
             "exclusive CPUs 1 differ from its claims' 1-2"},
        Case{"ExclusiveUnionOfTwoClaims",
             [](Snapshot& s) {
               s.containers[0] =
                   Container("c1", ContainerKind::kExclusive, {"a", "b"}, CpuSet{1, 2, 3});
             },
             nullptr},
        // A stopped container outlives its claim until RemoveContainer: a note, not a violation.
        Case{"MissingClaim",
             [](Snapshot& s) {
               s.containers[0] = Container("c1", ContainerKind::kExclusive, {"zz"}, CpuSet{1, 2});
             },
             nullptr},
        Case{"DuplicateContainer", [](Snapshot& s) { s.containers.push_back(s.containers[1]); },
             "container c2 (ns/pod/c2): duplicate id"},
        Case{"UnpublishedPoolSkipsPoolChecks",
             [](Snapshot& s) { s.shared_pool = SharedPoolRecord{}; }, nullptr}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(VerifyNotesTest, NamesAContainerWhoseClaimIsGone) {
  Snapshot s = Good();
  s.containers[0] = Container("c1", ContainerKind::kExclusive, {"zz"}, CpuSet{1, 2});
  const VerifyResult r = VerifySnapshot(s);
  EXPECT_THAT(r.violations, IsEmpty());
  EXPECT_THAT(r.notes, ElementsAre(HasSubstr("container c1 (ns/pod/c1): refers to claim zz, no "
                                             "longer prepared")));
}

TEST(VerifyNotesTest, SaysWhatWasSkipped) {
  Snapshot s = Good();
  s.topology = TopologySummary{};
  s.shared_pool = SharedPoolRecord{};
  const VerifyResult r = VerifySnapshot(s);
  EXPECT_THAT(r.violations, IsEmpty());
  EXPECT_THAT(r.notes, ElementsAre(HasSubstr("topology not published"),
                                   HasSubstr("shared pool not published")));
}

}  // namespace
}  // namespace dracpu::shm
