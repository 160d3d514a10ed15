#include "dra-agent/allocator/allocator_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu::allocator {
namespace {

using ::testing::HasSubstr;
using Options = std::vector<std::pair<std::string, std::string>>;

TEST(AllocatorOptionsTest, DefaultsMatchTheIssue) {
  Result<AllocatorOptions> o = ParseAllocatorOptions({});
  ASSERT_THAT(o, IsOk());
  EXPECT_FALSE(o->full_pcpus_only);
  EXPECT_FALSE(o->distribute_cpus_across_numa);
  EXPECT_FALSE(o->align_by_socket);
  EXPECT_TRUE(o->prefer_align_cpus_by_uncorecache);
  EXPECT_FALSE(o->distribute_cpus_across_cores);
  EXPECT_FALSE(o->strict_cpu_reservation);
  EXPECT_EQ(o->core_type, CoreTypePreference::kPerformance);
}

TEST(AllocatorOptionsTest, ParsesEveryKnownOption) {
  Result<AllocatorOptions> o = ParseAllocatorOptions({{"full-pcpus-only", "true"},
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
  EXPECT_TRUE(o->strict_cpu_reservation);
  EXPECT_EQ(o->core_type, CoreTypePreference::kEfficiency);
  EXPECT_THAT(ParseAllocatorOptions({{"core-type", "any"}}), IsOk());
  // The uncore option is on by default; that alone must not block the spread option.
  EXPECT_THAT(ParseAllocatorOptions({{"distribute-cpus-across-cores", "true"}}), IsOk());
}

struct BadCase {
  const char* name;
  Options options;
  const char* message;
};

class AllocatorOptionsErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(AllocatorOptionsErrorTest, RejectsNamingTheOption) {
  EXPECT_THAT(ParseAllocatorOptions(GetParam().options),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AllocatorOptionsErrorTest,
    ::testing::Values(
        BadCase{"unknown", {{"full-cores", "true"}}, "unknown option \"full-cores\""},
        BadCase{"bad_bool", {{"full-pcpus-only", "yes"}}, "\"full-pcpus-only\": value \"yes\""},
        BadCase{"bad_core_type", {{"core-type", "big"}}, "performance, efficiency, any"},
        BadCase{"duplicate",
                {{"align-by-socket", "true"}, {"align-by-socket", "false"}},
                "more than once"},
        BadCase{"full_and_spread",
                {{"full-pcpus-only", "true"}, {"distribute-cpus-across-cores", "true"}},
                "cannot be used together"},
        BadCase{
            "numa_and_uncore",
            {{"distribute-cpus-across-numa", "true"}, {"prefer-align-cpus-by-uncorecache", "true"}},
            "cannot be used together"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dracpu::allocator
