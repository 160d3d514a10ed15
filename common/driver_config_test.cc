#include "common/driver_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(DriverConfig, DefaultsMatchTheReferenceDriver) {
  const DriverConfig c;
  EXPECT_EQ(c.cpu_device_mode, CpuDeviceMode::kGrouped);
  EXPECT_EQ(c.group_by, GroupBy::kNumaNode);
  EXPECT_TRUE(c.reserved_cpus.Empty());
  EXPECT_TRUE(c.strict_cpu_reservation);
  EXPECT_EQ(c.min_shared_cpus, 1);
  EXPECT_TRUE(c.policy.prefer_align_cpus_by_uncorecache);
  EXPECT_EQ(c.policy.core_type, CoreTypePreference::kPerformance);
}

TEST(DriverConfig, ParsesEveryKey) {
  DriverConfig c;
  ASSERT_THAT(ParseDriverConfig(R"(apiVersion: v1alpha1
cpuDeviceMode: individual
groupBy: socket
reservedCPUs: "0-1,8"
hostnameOverride: node-a
kubeconfig: /etc/k.yaml
publishNodeAllocatableResourceMapping: true
strictCPUReservation: false
minSharedCPUs: 4
sharedPoolUpdates: never
sysfsOverlay: /etc/overlay.yaml
fullPCPUsOnly: true
distributeCPUsAcrossNUMA: true
alignBySocket: true
preferAlignCPUsByUncoreCache: false
coreType: efficiency
alignMemory: true
)",
                                "cfg.yaml", c),
              IsOk());
  EXPECT_EQ(c.cpu_device_mode, CpuDeviceMode::kIndividual);
  EXPECT_EQ(c.group_by, GroupBy::kSocket);
  EXPECT_EQ(c.reserved_cpus.ToListString(), "0-1,8");
  EXPECT_EQ(c.hostname_override, "node-a");
  EXPECT_EQ(c.kubeconfig, "/etc/k.yaml");
  EXPECT_TRUE(c.publish_node_allocatable_resource_mapping);
  EXPECT_FALSE(c.strict_cpu_reservation);
  EXPECT_EQ(c.min_shared_cpus, 4);
  EXPECT_EQ(c.shared_pool_updates, SharedPoolUpdates::kNever);
  EXPECT_EQ(c.sysfs_overlay, "/etc/overlay.yaml");
  EXPECT_TRUE(c.policy.full_pcpus_only);
  EXPECT_TRUE(c.policy.distribute_cpus_across_numa);
  EXPECT_TRUE(c.policy.align_by_socket);
  EXPECT_FALSE(c.policy.prefer_align_cpus_by_uncorecache);
  EXPECT_EQ(c.policy.core_type, CoreTypePreference::kEfficiency);
  EXPECT_TRUE(c.policy.align_memory);
  // distributeCPUsAcrossCores goes with neither fullPCPUsOnly nor the distribution (kubelet).
  DriverConfig d;
  ASSERT_THAT(
      ParseDriverConfig("distributeCPUsAcrossCores: True\npreferAlignCPUsByUncoreCache: f\n",
                        "cfg.yaml", d),
      IsOk());
  EXPECT_TRUE(d.policy.distribute_cpus_across_cores);
}

TEST(DriverConfig, PlacementKeysTakeThePolicyAliases) {
  DriverConfig c;
  ASSERT_THAT(ParseDriverConfig("alignByUncoreCache: false\n", "cfg.yaml", c), IsOk());
  EXPECT_FALSE(c.policy.prefer_align_cpus_by_uncorecache);
  EXPECT_THAT(
      ParseDriverConfig("alignByUncoreCache: false\npreferAlignCPUsByUncoreCache: true\n", "f", c),
      StatusIs(StatusCode::kInvalidArgument,
               HasSubstr("f:2: key \"preferAlignCPUsByUncoreCache\"")));
  EXPECT_THAT(ParseDriverConfig("fullPCPUsOnly: true\ndistributeCPUsAcrossCores: true\n", "f", c),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("cannot both be true")));
}

TEST(DriverConfig, EmptyFileKeepsValues) {
  DriverConfig c;
  c.min_shared_cpus = 3;
  ASSERT_THAT(ParseDriverConfig("", "cfg.yaml", c), IsOk());
  ASSERT_THAT(ParseDriverConfig("# only a comment\n", "cfg.yaml", c), IsOk());
  EXPECT_EQ(c.min_shared_cpus, 3);
}

struct BadConfig {
  const char* yaml;
  const char* expected;
};

class DriverConfigRejects : public ::testing::TestWithParam<BadConfig> {};

TEST_P(DriverConfigRejects, NamesKeyValueAndLine) {
  DriverConfig c;
  c.min_shared_cpus = 7;
  EXPECT_THAT(ParseDriverConfig(GetParam().yaml, "/etc/dracpu/config.yaml", c),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(GetParam().expected)));
  EXPECT_EQ(c.min_shared_cpus, 7) << "a rejected file must not change the config";
}

INSTANTIATE_TEST_SUITE_P(
    Bad, DriverConfigRejects,
    ::testing::Values(BadConfig{"groupBy: numa\n",
                                "config.yaml:1: key \"groupBy\": value \"numa\": \"numa\" is not "
                                "one of numanode, socket, machine"},
                      BadConfig{"minSharedCPUs: 2\nfoo: 1\n",
                                "config.yaml:2: key \"foo\": unknown key"},
                      BadConfig{"groupby: socket\n", "did you mean \"groupBy\"?"},
                      // Found by make fuzz: a value with a line break or control bytes is
                      // escaped, so every line of the error still names the file.
                      BadConfig{"groupBy: \"numa\\nnode\\x01\"\n",
                                "config.yaml:1: key \"groupBy\": value \"numa\\x0anode\\x01\": "
                                "\"numa\\x0anode\\x01\" is not one of"},
                      BadConfig{"groupBy: socket\ngroupBy: machine\n",
                                "config.yaml:2: key \"groupBy\": duplicate key"},
                      BadConfig{"reservedCPUs: 3-1\n", "reservedCPUs \"3-1\": reversed range"},
                      BadConfig{"minSharedCPUs: 0\n", "must be a whole number from 1"},
                      BadConfig{"minSharedCPUs: 2x\n", "must be a whole number from 1"},
                      BadConfig{"fullPCPUsOnly: yes\n", "\"yes\" is not true or false"},
                      BadConfig{"bindAddress: :9090\n", "is a flag only (--bind-address)"},
                      BadConfig{"sysfsOverlay: {}\n", "must be a single value"},
                      BadConfig{"coreType: big\n", "performance, efficiency, any"},
                      BadConfig{"apiVersion: v2\n", "only v1alpha1"},
                      BadConfig{"groupBy:\n", "has no value"},
                      BadConfig{"groupBy: [a, b]\n", "must be a single value"},
                      BadConfig{"- a\n- b\n", "must be a flat mapping"},
                      BadConfig{"groupBy: [socket\n", "not valid YAML"}));

TEST(DriverConfig, ReportsEveryProblemAtOnce) {
  DriverConfig c;
  Status s = ParseDriverConfig("foo: 1\ngroupBy: x\nbar: 2\n", "f", c);
  EXPECT_THAT(s, StatusIs(StatusCode::kInvalidArgument,
                          AllOf(HasSubstr("f:1: key \"foo\""), HasSubstr("f:2: key \"groupBy\""),
                                HasSubstr("f:3: key \"bar\""))));
}

TEST(DriverConfig, YamlRoundTrip) {
  DriverConfig c;
  c.cpu_device_mode = CpuDeviceMode::kIndividual;
  c.reserved_cpus = CpuSet::ParseList("0,4-5").value();
  c.hostname_override = "we\"ird";
  c.policy.core_type = CoreTypePreference::kAny;
  c.min_shared_cpus = 2;
  DriverConfig back;
  ASSERT_THAT(ParseDriverConfig(DriverConfigToYaml(c), "roundtrip", back), IsOk());
  EXPECT_EQ(DriverConfigToYaml(back), DriverConfigToYaml(c));
  EXPECT_EQ(back.hostname_override, "we\"ird");
}

}  // namespace
}  // namespace dracpu
