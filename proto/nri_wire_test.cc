// Wire identity of our nri.proto subset with containerd/nri pkg/api/api.proto (protocols.md §3):
// every declared field of the messages the plugin reads or writes is pinned by comparing
// serialized bytes with hand-encoded protobuf; parsing checks that upstream-only fields are
// skipped without disturbing the ones we declare.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "nri.pb.h"

namespace {

namespace api = nri::pkg::api::v1alpha1;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(NriWire, RegisterPluginRequest) {
  api::RegisterPluginRequest req;
  req.set_plugin_name("d");
  req.set_plugin_idx("00");
  req.set_nri_version("v");
  EXPECT_EQ(req.SerializeAsString(), Bytes({0x0a, 1, 'd', 0x12, 2, '0', '0', 0x1a, 1, 'v'}));
}

TEST(NriWire, ConfigureRequest) {
  api::ConfigureRequest req;
  req.set_config("c");
  req.set_runtime_name("r");
  req.set_runtime_version("1");
  req.set_registration_timeout(5000);  // varint 0x88 0x27
  req.set_request_timeout(2000);       // varint 0xd0 0x0f
  req.set_nri_version("v");
  EXPECT_EQ(req.SerializeAsString(), Bytes({0x0a, 1, 'c', 0x12, 1, 'r', 0x1a, 1, '1', 0x20, 0x88,
                                            0x27, 0x28, 0xd0, 0x0f, 0x32, 1, 'v'}));
}

TEST(NriWire, ConfigureResponseEventsIsField2) {
  api::ConfigureResponse resp;
  resp.set_events(0x688);  // varint 0x88 0x0d
  EXPECT_EQ(resp.SerializeAsString(), Bytes({0x10, 0x88, 0x0d}));
}

TEST(NriWire, SynchronizeMore) {
  api::SynchronizeRequest req;
  req.add_pods()->set_id("p");
  req.add_containers()->set_id("c");
  req.set_more(true);
  EXPECT_EQ(req.SerializeAsString(),
            Bytes({0x0a, 3, 0x0a, 1, 'p', 0x12, 3, 0x0a, 1, 'c', 0x18, 1}));
  api::SynchronizeResponse resp;
  resp.add_update()->set_container_id("c");
  resp.set_more(true);
  EXPECT_EQ(resp.SerializeAsString(), Bytes({0x0a, 3, 0x0a, 1, 'c', 0x10, 1}));
}

TEST(NriWire, CreateContainerResponseCpusetAdjustment) {
  api::CreateContainerResponse resp;
  resp.mutable_adjust()->mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus("0-1");
  // CreateContainerResponse.adjust(1) > ContainerAdjustment.linux(6) >
  // LinuxContainerAdjustment.resources(2) > LinuxResources.cpu(2) > LinuxCPU.cpus(6).
  EXPECT_EQ(resp.SerializeAsString(),
            Bytes({0x0a, 11, 0x32, 9, 0x12, 7, 0x12, 5, 0x32, 3, '0', '-', '1'}));
}

TEST(NriWire, ContainerAdjustmentEnvAndAnnotations) {
  api::ContainerAdjustment adjust;
  (*adjust.mutable_annotations())["k"] = "v";
  auto* env = adjust.add_env();
  env->set_key("K");
  env->set_value("V");
  adjust.add_args("a");
  EXPECT_EQ(adjust.SerializeAsString(), Bytes({0x12, 6, 0x0a, 1, 'k', 0x12, 1, 'v', 0x22, 6, 0x0a,
                                               1, 'K', 0x12, 1, 'V', 0x4a, 1, 'a'}));
}

TEST(NriWire, ContainerUpdate) {
  api::ContainerUpdate update;
  update.set_container_id("c");
  auto* cpu = update.mutable_linux()->mutable_resources()->mutable_cpu();
  cpu->set_cpus("1");
  cpu->set_mems("0");
  update.set_ignore_failure(true);
  EXPECT_EQ(update.SerializeAsString(),
            Bytes({0x0a, 1, 'c', 0x12, 10, 0x0a, 8, 0x12, 6, 0x32, 1, '1', 0x3a, 1, '0', 0x18, 1}));
}

TEST(NriWire, UpdateContainersRequestAndResponse) {
  api::UpdateContainersRequest req;
  req.add_update()->set_container_id("c");
  auto* evict = req.add_evict();
  evict->set_container_id("c");
  evict->set_reason("r");
  EXPECT_EQ(req.SerializeAsString(),
            Bytes({0x0a, 3, 0x0a, 1, 'c', 0x12, 6, 0x0a, 1, 'c', 0x12, 1, 'r'}));
  api::UpdateContainersResponse resp;
  resp.add_failed()->set_container_id("c");
  EXPECT_EQ(resp.SerializeAsString(), Bytes({0x0a, 3, 0x0a, 1, 'c'}));
}

TEST(NriWire, ContainerFields) {
  api::Container c;
  c.set_id("i");
  c.set_pod_sandbox_id("p");
  c.set_name("n");
  c.set_state(api::CONTAINER_RUNNING);
  (*c.mutable_annotations())["k"] = "v";
  c.add_args("a");
  c.add_env("A=B");
  c.mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus("2");
  c.mutable_linux()->set_cgroups_path("g");
  c.set_pid(7);
  EXPECT_EQ(c.SerializeAsString(),
            Bytes({0x0a, 1,    'i',  0x12, 1,   'p',  0x1a, 1,   'n',  0x20, 3,   0x32, 6,   0x0a,
                   1,    'k',  0x12, 1,    'v', 0x3a, 1,    'a', 0x42, 3,    'A', '=',  'B', 0x5a,
                   10,   0x1a, 5,    0x12, 3,   0x32, 1,    '2', 0x2a, 1,    'g', 0x60, 7}));
}

TEST(NriWire, PodSandboxFields) {
  api::PodSandbox pod;
  pod.set_id("s");
  pod.set_name("n");
  pod.set_uid("u");
  pod.set_namespace_("ns");
  (*pod.mutable_labels())["l"] = "m";
  pod.set_runtime_handler("h");
  pod.mutable_linux()->set_cgroup_parent("c");
  pod.set_pid(9);
  pod.add_ips("1.2");
  EXPECT_EQ(pod.SerializeAsString(),
            Bytes({0x0a, 1,    's',  0x12, 1,   'n',  0x1a, 1,    'u', 0x22, 2,   'n',
                   's',  0x2a, 6,    0x0a, 1,   'l',  0x12, 1,    'm', 0x3a, 1,   'h',
                   0x42, 3,    0x1a, 1,    'c', 0x48, 9,    0x52, 3,   '1',  '.', '2'}));
}

TEST(NriWire, LinuxResourcesMemoryAndCpuWrappers) {
  api::LinuxResources r;
  r.mutable_memory()->mutable_limit()->set_value(5);
  r.mutable_cpu()->mutable_shares()->set_value(2);
  r.mutable_cpu()->mutable_quota()->set_value(-1);  // int64: ten-byte varint
  r.mutable_pids()->set_limit(3);
  EXPECT_EQ(
      r.SerializeAsString(),
      Bytes({0x0a, 4,    0x0a, 2,    0x08, 5,    0x12, 17,   0x0a, 2,    0x08, 2, 0x12, 11, 0x08,
             0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x42, 2, 0x08, 3}));
}

TEST(NriWire, StateChangeEvent) {
  api::StateChangeEvent ev;
  ev.set_event(api::REMOVE_CONTAINER);
  ev.mutable_pod()->set_id("s");
  ev.mutable_container()->set_id("c");
  EXPECT_EQ(ev.SerializeAsString(),
            Bytes({0x08, 11, 0x12, 3, 0x0a, 1, 's', 0x1a, 3, 0x0a, 1, 'c'}));
}

TEST(NriWire, EventRequestsShareLayout) {
  // Create/Stop/Remove/Update requests: pod = 1, container = 2; UpdateContainer adds
  // linux_resources = 3.
  api::UpdateContainerRequest req;
  req.mutable_pod()->set_id("s");
  req.mutable_container()->set_id("c");
  req.mutable_linux_resources()->mutable_cpu()->set_cpus("3");
  const std::string expected =
      Bytes({0x0a, 3, 0x0a, 1, 's', 0x12, 3, 0x0a, 1, 'c', 0x1a, 5, 0x12, 3, 0x32, 1, '3'});
  EXPECT_EQ(req.SerializeAsString(), expected);
  api::CreateContainerRequest create;
  ASSERT_TRUE(create.ParseFromString(expected));  // field 3 unknown there: skipped
  EXPECT_EQ(create.pod().id(), "s");
  EXPECT_EQ(create.container().id(), "c");
  api::StopContainerResponse stop;
  stop.add_update()->set_container_id("c");
  EXPECT_EQ(stop.SerializeAsString(), Bytes({0x0a, 3, 0x0a, 1, 'c'}));
  api::UpdateContainerResponse update;
  update.add_evict()->set_container_id("c");
  EXPECT_EQ(update.SerializeAsString(), Bytes({0x12, 3, 0x0a, 1, 'c'}));
}

TEST(NriWire, UpstreamOnlyFieldsAreSkipped) {
  // A Container as upstream sends it, with mounts (9, a Mount with destination "/m") and
  // rlimits (13) that our subset does not declare, around the env (8) we read.
  const std::string wire = Bytes({0x0a, 1,   'i',  0x42, 3,    'A', '=', 'B',  0x4a, 4,    0x0a, 2,
                                  '/',  'm', 0x6a, 3,    0x0a, 1,   't', 0x5a, 2,    0x2a, 0});
  api::Container c;
  ASSERT_TRUE(c.ParseFromString(wire));
  EXPECT_EQ(c.id(), "i");
  ASSERT_EQ(c.env_size(), 1);
  EXPECT_EQ(c.env(0), "A=B");
  EXPECT_TRUE(c.has_linux());
}

TEST(NriWire, EventEnumValues) {
  EXPECT_EQ(api::RUN_POD_SANDBOX, 1);
  EXPECT_EQ(api::CREATE_CONTAINER, 4);
  EXPECT_EQ(api::UPDATE_CONTAINER, 8);
  EXPECT_EQ(api::STOP_CONTAINER, 10);
  EXPECT_EQ(api::REMOVE_CONTAINER, 11);
  EXPECT_EQ(api::VALIDATE_CONTAINER_ADJUSTMENT, 14);
  EXPECT_EQ(api::LAST, 15);
  EXPECT_EQ(api::CONTAINER_STOPPED, 4);
}

TEST(NriWire, ServiceAndMethodNames) {
  const auto* file = api::Empty::descriptor()->file();
  const auto* runtime = file->FindServiceByName("Runtime");
  const auto* plugin = file->FindServiceByName("Plugin");
  ASSERT_NE(runtime, nullptr);
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(runtime->full_name(), "nri.pkg.api.v1alpha1.Runtime");
  EXPECT_EQ(plugin->full_name(), "nri.pkg.api.v1alpha1.Plugin");
  for (const char* m : {"RegisterPlugin", "UpdateContainers"}) {
    EXPECT_NE(runtime->FindMethodByName(m), nullptr) << m;
  }
  for (const char* m : {"Configure", "Synchronize", "Shutdown", "CreateContainer",
                        "UpdateContainer", "StopContainer", "RemoveContainer", "StateChange"}) {
    EXPECT_NE(plugin->FindMethodByName(m), nullptr) << m;
  }
}

}  // namespace
