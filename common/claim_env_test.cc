#include "common/claim_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::HasSubstr;

TEST(ClaimEnv, RoundTrip) {
  const std::string uid = "8ec6fd12-bb08-4936-a857-866f50153c21";
  const std::string entry = ClaimEnvEntry(uid, CpuSet::ParseList("69,4-5,68").value());
  EXPECT_EQ(entry, "DRA_CPUSET_8ec6fd12-bb08-4936-a857-866f50153c21=4-5,68-69");
  auto parsed = ParseClaimEnvEntry(entry);
  ASSERT_THAT(parsed, IsOk());
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ((*parsed)->claim_uid, uid);
  EXPECT_EQ((*parsed)->cpus.ToListString(), "4-5,68-69");
}

TEST(ClaimEnv, OtherVariablesAreIgnored) {
  for (const char* e : {"PATH=/bin", "DRA_CPUSETX=1", "dra_cpuset_x=1", "", "=x"}) {
    auto parsed = ParseClaimEnvEntry(e);
    ASSERT_THAT(parsed, IsOk()) << e;
    EXPECT_FALSE(parsed->has_value()) << e;
  }
}

struct BadEntry {
  const char* entry;
  const char* reason;
};

class ClaimEnvRejects : public ::testing::TestWithParam<BadEntry> {};

TEST_P(ClaimEnvRejects, FailsClosedWithTheVariableName) {
  EXPECT_THAT(ParseClaimEnvEntry(GetParam().entry),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(GetParam().reason)));
}

INSTANTIATE_TEST_SUITE_P(Forged, ClaimEnvRejects,
                         ::testing::Values(BadEntry{"DRA_CPUSET_abc",
                                                    "DRA_CPUSET_abc has no value"},
                                           BadEntry{"DRA_CPUSET_abc=", "names no CPUs"},
                                           BadEntry{"DRA_CPUSET_abc=1-", "missing CPU id"},
                                           BadEntry{"DRA_CPUSET_abc=0-3,", "empty item"},
                                           BadEntry{"DRA_CPUSET_abc= 1", "expected a CPU id"},
                                           BadEntry{"DRA_CPUSET_abc=99999", "out of range"},
                                           BadEntry{"DRA_CPUSET_=1", "claim uid is empty"},
                                           BadEntry{"DRA_CPUSET_a/b=1", "other than letters"},
                                           BadEntry{"DRA_CPUSET_-ab=1", "must start and end"},
                                           BadEntry{"DRA_CPUSET_abc=1\n2", "newline"}));

TEST(ClaimEnv, UidRules) {
  EXPECT_THAT(ValidateClaimUid("a"), IsOk());
  EXPECT_THAT(ValidateClaimUid(std::string(63, 'a')), IsOk());
  EXPECT_THAT(ValidateClaimUid(std::string(64, 'a')), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(ValidateClaimUid("a.b"), StatusIs(StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace dracpu
