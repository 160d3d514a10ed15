#include "dra-agent/agent/agent_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

// The environments below name only what matters; the rest stays empty.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;

Result<AgentConfig> Resolve(const std::vector<std::string>& args, const AgentEnvironment& env) {
  FlagParser parser;
  AgentFlags flags;
  RegisterAgentFlags(parser, flags);
  auto rest = parser.Parse(args);
  if (!rest.ok()) return rest.status();
  return ResolveAgentConfig(parser, flags, env);
}

TEST(AgentConfig, Defaults) {
  auto c = Resolve({}, {"", "Worker-1", ""});
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->node_name, "worker-1");  // hostname, lowercased
  EXPECT_EQ(c->bind_address, ":8080");
  EXPECT_EQ(c->kubelet_root_dir, "/var/lib/kubelet");
  EXPECT_EQ(c->cdi_root, "/var/run/cdi");
  EXPECT_EQ(c->driver.group_by, GroupBy::kNumaNode);
  EXPECT_EQ(c->kubeconfig, "");
}

TEST(AgentConfig, FileBeatsDefaultsAndExplicitFlagsBeatTheFile) {
  const std::string file =
      "groupBy: socket\nreservedCPUs: \"0-1\"\nhostnameOverride: from-file\nkubeconfig: /k\n";
  auto c = Resolve({"--config=/etc/dracpu.yaml", "--reserved-cpus", "3"}, {"", "h", file});
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->driver.group_by, GroupBy::kSocket);
  EXPECT_EQ(c->driver.reserved_cpus.ToListString(), "3");
  EXPECT_EQ(c->node_name, "from-file");
  EXPECT_EQ(c->kubeconfig, "/k");
  auto d = Resolve({"--config=/c", "--kubeconfig=/flag", "--group-by=machine"}, {"", "h", file});
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ(d->kubeconfig, "/flag");
  EXPECT_EQ(d->driver.group_by, GroupBy::kMachine);
}

TEST(AgentConfig, NodeNameChain) {
  EXPECT_EQ(Resolve({"--node-name=N1"}, {"env", "h", ""})->node_name, "n1");
  EXPECT_EQ(Resolve({}, {"env-node", "h", ""})->node_name, "env-node");
  EXPECT_EQ(Resolve({"--hostname-override=ovr"}, {"", "h", ""})->node_name, "ovr");
  // The reference's precedence: hostnameOverride wins over the name the chart puts in
  // $NODE_NAME, from the file or the flag; only our own --node-name beats it.
  EXPECT_EQ(Resolve({"--hostname-override=ovr"}, {"env", "h", ""})->node_name, "ovr");
  EXPECT_EQ(Resolve({"--config=/c"}, {"env", "h", "hostnameOverride: Node-X\n"})->node_name,
            "node-x");
  EXPECT_EQ(Resolve({"--node-name=n", "--hostname-override=ovr"}, {"env", "h", ""})->node_name,
            "n");
  EXPECT_THAT(Resolve({}, {"", "", ""}),
              StatusIs(StatusCode::kFailedPrecondition, HasSubstr("no node name")));
}

TEST(AgentConfig, DeprecatedFlagsWorkAndAreReported) {
  auto c = Resolve({"--cpu-device-mode=individual", "--group-by", "socket", "--reserved-cpus=0",
                    "--hostname-override=n", "--sysfs-overlay=/etc/o.yaml"},
                   {"", "h", ""});
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->driver.cpu_device_mode, CpuDeviceMode::kIndividual);
  EXPECT_EQ(c->driver.sysfs_overlay, "/etc/o.yaml");
  ASSERT_EQ(c->warnings.size(), 5u);
  EXPECT_THAT(c->warnings[4], HasSubstr("--sysfs-overlay is deprecated"));
  EXPECT_THAT(c->warnings[4], HasSubstr("\"sysfsOverlay\""));
  EXPECT_TRUE(Resolve({"--v=3"}, {"", "h", ""})->warnings.empty());
  FlagParser parser;
  AgentFlags flags;
  RegisterAgentFlags(parser, flags);
  EXPECT_THAT(parser.Usage(), HasSubstr("(DEPRECATED: prefer driverConfig field \"sysfsOverlay\""));
}

TEST(AgentConfig, HostRootSysfsOverlayAndVmodule) {
  AgentEnvironment env{"", "h", "sysfsOverlay: /etc/overlay.yaml\n", "/host"};
  auto c = Resolve({"--config=/c", "-vmodule=slice*=4", "-v", "2"}, env);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->sysfs_root, "/host");
  EXPECT_EQ(c->driver.sysfs_overlay, "/etc/overlay.yaml");
  EXPECT_EQ(c->vmodule, "slice*=4");
  EXPECT_EQ(c->verbosity, 2);
  EXPECT_EQ(Resolve({"--sysfs-root=/mine"}, env)->sysfs_root, "/mine");
}

TEST(AgentConfig, BadInputNamesTheSource) {
  EXPECT_THAT(Resolve({"--group-by=numa"}, {"", "h", ""}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("flag --group-by")));
  EXPECT_THAT(Resolve({"--reserved-cpus=1-"}, {"", "h", ""}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("flag --reserved-cpus")));
  EXPECT_THAT(Resolve({"--config=/etc/x.yaml"}, {"", "h", "bogus: 1\n"}),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("/etc/x.yaml:1: key \"bogus\": unknown key")));
  EXPECT_THAT(Resolve({"--kubelet-root-dir=rel"}, {"", "h", ""}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("must be absolute")));
}

}  // namespace
}  // namespace dracpu::dra
