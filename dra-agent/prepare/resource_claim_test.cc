#include "dra-agent/prepare/resource_claim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;

constexpr char kClaim[] = R"({
  "metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
  "status": {"allocation": {"devices": {
    "results": [
      {"request": "big/fast", "driver": "dra.cpu", "pool": "node-a", "device": "cpudevnuma000",
       "shareID": "s1", "consumedCapacity": {"dra.cpu/cpu": "4"}},
      {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu0"}],
    "config": [
      {"source": "FromClaim", "requests": ["big"], "opaque": {"driver": "dra.cpu",
        "parameters": {"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": "2-5"},
                       "policy": {"fullPCPUsOnly": true, "coreType": "any"}}}},
      {"source": "FromClass", "opaque": {"driver": "gpu.example.com", "parameters": {"x": 1}}}]
  }}}})";

TEST(ResourceClaim, ReadsAllocationAndConfig) {
  auto claim = ParseResourceClaim(kClaim);
  ASSERT_THAT(claim, IsOk());
  EXPECT_EQ(claim->uid, "u1");
  EXPECT_TRUE(claim->allocated);
  ASSERT_EQ(claim->results.size(), 2u);
  EXPECT_EQ(claim->results[0].base_request, "big");
  EXPECT_EQ(*claim->results[0].share_id, "s1");
  EXPECT_EQ(*claim->results[0].consumed_cpu, "4");
  auto config = ConfigForRequest(*claim, "big/fast");
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->cpuset->ToListString(), "2-5");
  EXPECT_TRUE(*config->policy.full_pcpus_only);
  EXPECT_EQ(*config->policy.core_type, CoreTypePreference::kAny);
  const PlacementPolicy merged = config->policy.ApplyTo(PlacementPolicy{});
  EXPECT_TRUE(merged.full_pcpus_only);
  EXPECT_TRUE(merged.prefer_align_cpus_by_uncorecache);  // untouched
  // A request the config does not name gets nothing.
  auto other = ConfigForRequest(*claim, "small");
  ASSERT_THAT(other, IsOk());
  EXPECT_FALSE(other->cpuset.has_value());
}

TEST(ResourceClaim, UnallocatedClaim) {
  auto claim = ParseResourceClaim(R"({"metadata": {"name": "c", "uid": "u"}, "status": {}})");
  ASSERT_THAT(claim, IsOk());
  EXPECT_FALSE(claim->allocated);
}

TEST(ResourceClaim, MalformedDocumentsNameTheField) {
  EXPECT_THAT(ParseResourceClaim("{"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
  EXPECT_THAT(ParseResourceClaim(R"({"metadata": {"name": "c"}})"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("metadata.uid: missing")));
  EXPECT_THAT(
      ParseResourceClaim(
          R"({"metadata": {"name": "c", "uid": "u"}, "status": {"allocation": {"devices": {"results": [{"request": "r"}]}}}})"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("results[0].driver: missing")));
  EXPECT_THAT(
      ParseResourceClaim(
          R"({"metadata": {"name": "c", "uid": "u"}, "status": {"allocation": {"devices": {"results": [{"request": "r", "driver": "d", "pool": "p", "device": "x", "consumedCapacity": {"dra.cpu/cpu": 4}}]}}}})"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a quantity string")));
}

// The per-claim `policy` takes every node-wide placement key under the config file's name, and
// the old per-claim spelling as an alias (one parser: common/placement_policy.h).
TEST(ResourceClaim, PolicyKeysAreTheConfigFileKeys) {
  const std::string json =
      R"({"metadata": {"name": "c", "uid": "u"}, "status": {"allocation": {"devices": {"results": [],
      "config": [{"source": "FromClaim", "opaque": {"driver": "dra.cpu", "parameters":
      {"apiVersion": "v1alpha1", "policy": {"fullPCPUsOnly": true, "distributeCPUsAcrossNUMA": true,
       "alignBySocket": true, "preferAlignCPUsByUncoreCache": false, "coreType": "efficiency",
       "alignMemory": true}}}},
      {"source": "FromClaim", "requests": ["b"], "opaque": {"driver": "dra.cpu", "parameters":
      {"apiVersion": "v1alpha1", "policy": {"distributeCPUsAcrossCores": "true",
       "alignByUncoreCache": false}}}}]}}}})";
  auto claim = ParseResourceClaim(json);
  ASSERT_THAT(claim, IsOk());
  auto a = ConfigForRequest(*claim, "a");
  ASSERT_THAT(a, IsOk());
  const PlacementPolicy p = a->policy.ApplyTo(PlacementPolicy{});
  EXPECT_TRUE(p.full_pcpus_only);
  EXPECT_TRUE(p.distribute_cpus_across_numa);
  EXPECT_TRUE(p.align_by_socket);
  EXPECT_FALSE(p.prefer_align_cpus_by_uncorecache);
  EXPECT_EQ(p.core_type, CoreTypePreference::kEfficiency);
  EXPECT_TRUE(p.align_memory);
  // Request b gets the first config (no requests: all) and its own: one policy too many.
  EXPECT_THAT(ConfigForRequest(*claim, "b"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("more than one policy")));
}

struct BadConfig {
  const char* parameters;
  const char* source;
  const char* reason;
};

class ConfigRejects : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigRejects, SaysWhy) {
  const std::string json =
      std::string(
          R"({"metadata": {"name": "c", "uid": "u"}, "status": {"allocation": {"devices": {"results": [], "config": [{"source": ")") +
      GetParam().source + R"(", "opaque": {"driver": "dra.cpu", "parameters": )" +
      GetParam().parameters + "}}]}}}}";
  auto claim = ParseResourceClaim(json);
  ASSERT_THAT(claim, IsOk());
  EXPECT_THAT(ConfigForRequest(*claim, "r"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(GetParam().reason)));
}

INSTANTIATE_TEST_SUITE_P(
    Bad, ConfigRejects,
    ::testing::Values(
        BadConfig{R"({"cpuConfig": {"cpuset": "1"}})", "FromClaim",
                  "apiVersion: missing (must be v1alpha1)"},
        BadConfig{R"({"apiVersion": "v1", "cpuConfig": {"cpuset": "1"}})", "FromClaim",
                  "apiVersion: \"v1\" is not supported (must be v1alpha1)"},
        BadConfig{R"({"apiVersion": 1, "cpuConfig": {"cpuset": "1"}})", "FromClaim",
                  "apiVersion: not a string"},
        BadConfig{R"({"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": ""}})", "FromClaim",
                  "is empty"},
        BadConfig{R"({"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": "3-1"}})", "FromClaim",
                  "reversed range"},
        BadConfig{R"({"apiVersion": "v1alpha1", "cpuConfig": {"cpus": "1"}})", "FromClaim",
                  "missing or not a string"},
        BadConfig{R"({"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": "1"}})", "FromClass",
                  "from the DeviceClass"},
        BadConfig{R"({"apiVersion": "v1alpha1", "policy": {"fullPCPUsOnly": "yes"}})", "FromClaim",
                  "not true or false"},
        BadConfig{R"({"apiVersion": "v1alpha1", "policy": {"coreType": "big"}})", "FromClaim",
                  "is not one of"},
        BadConfig{R"({"apiVersion": "v1alpha1", "policy": {"turbo": true}})", "FromClaim",
                  "policy.turbo: unknown placement key"},
        BadConfig{R"({"apiVersion": "v1alpha1", "policy": {"fullPCPUsOnly": true,
                     "distributeCPUsAcrossCores": true}})",
                  "FromClaim", "cannot both be true"},
        BadConfig{R"({"apiVersion": "v1alpha1", "policy": {"alignByUncoreCache": true,
                     "preferAlignCPUsByUncoreCache": true}})",
                  "FromClaim", "two spellings"},
        BadConfig{R"({"apiVersion": "v1alpha1", "extra": 1})", "FromClaim", "extra: unknown key"},
        BadConfig{R"([1])", "FromClaim", "not a JSON object"}));

TEST(CpuQuantity, WholeCpusOnly) {
  EXPECT_THAT(ParseWholeCpuQuantity("4"), IsOkAndHolds(4));
  EXPECT_THAT(ParseWholeCpuQuantity("4000m"), IsOkAndHolds(4));
  EXPECT_THAT(ParseWholeCpuQuantity("2.0"), IsOkAndHolds(2));
  EXPECT_THAT(ParseWholeCpuQuantity("1500m"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("fraction")));
  EXPECT_THAT(ParseWholeCpuQuantity("1.5"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("fraction")));
  EXPECT_THAT(ParseWholeCpuQuantity("0"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not positive")));
  EXPECT_THAT(ParseWholeCpuQuantity("-2"), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseWholeCpuQuantity("2Ki"), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseWholeCpuQuantity(""), StatusIs(StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace dracpu::dra
