#include "dra-agent/allocator/allocator_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu::allocator {
namespace {

using ::testing::HasSubstr;
using Options = std::vector<std::pair<std::string, std::string>>;

TEST(KubeletOptionsTest, DefaultsMatchTheIssue) {
  Result<PlacementPolicy> o = ParseKubeletOptions({});
  ASSERT_THAT(o, IsOk());
  EXPECT_FALSE(o->full_pcpus_only);
  EXPECT_FALSE(o->distribute_cpus_across_numa);
  EXPECT_FALSE(o->align_by_socket);
  EXPECT_TRUE(o->prefer_align_cpus_by_uncorecache);
  EXPECT_FALSE(o->distribute_cpus_across_cores);
  EXPECT_EQ(o->core_type, CoreTypePreference::kPerformance);
}

TEST(KubeletOptionsTest, ParsesEveryKnownOption) {
  Result<PlacementPolicy> o = ParseKubeletOptions({{"full-pcpus-only", "true"},
                                                   {"distribute-cpus-across-numa", "True"},
                                                   {"align-by-socket", "1"},
                                                   {"prefer-align-cpus-by-uncorecache", "false"},
                                                   {"strict-cpu-reservation", "t"},
                                                   {"core-type", "efficiency"}});
  ASSERT_THAT(o, IsOk());
  EXPECT_TRUE(o->full_pcpus_only);
  EXPECT_TRUE(o->distribute_cpus_across_numa);
  EXPECT_TRUE(o->align_by_socket);
  EXPECT_FALSE(o->prefer_align_cpus_by_uncorecache);
  EXPECT_EQ(o->core_type, CoreTypePreference::kEfficiency);
  EXPECT_THAT(ParseKubeletOptions({{"core-type", "any"}}), IsOk());
  // The uncore option is on by default; that alone must not block the spread option.
  EXPECT_THAT(ParseKubeletOptions({{"distribute-cpus-across-cores", "true"}}), IsOk());
}

struct BadCase {
  const char* name;
  Options options;
  const char* message;
};

class KubeletOptionsErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(KubeletOptionsErrorTest, RejectsNamingTheOption) {
  EXPECT_THAT(ParseKubeletOptions(GetParam().options),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KubeletOptionsErrorTest,
    ::testing::Values(
        BadCase{
            "unknown", {{"full-cores", "true"}}, "option \"full-cores\": unknown placement key"},
        BadCase{"bad_bool",
                {{"full-pcpus-only", "yes"}},
                "\"full-pcpus-only\": \"yes\" is not true or false"},
        BadCase{"bad_core_type", {{"core-type", "big"}}, "performance, efficiency, any"},
        BadCase{
            "duplicate", {{"align-by-socket", "true"}, {"align-by-socket", "false"}}, "set twice"},
        BadCase{"full_and_spread",
                {{"full-pcpus-only", "true"}, {"distribute-cpus-across-cores", "true"}},
                "cannot both be true"},
        BadCase{
            "numa_and_uncore",
            {{"distribute-cpus-across-numa", "true"}, {"prefer-align-cpus-by-uncorecache", "true"}},
            "cannot both be true"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dracpu::allocator
