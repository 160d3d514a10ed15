#include "nri-agent/nri/convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dracpu::nri {
namespace {

TEST(Convert, PodRoundTrip) {
  const Pod pod{"sb", "web", "uid-1", "ns", {{"l", "1"}}, {{"a", "2"}}};
  api::PodSandbox pb;
  ToProto(pod, &pb);
  EXPECT_EQ(FromProto(pb), pod);
}

TEST(Convert, ContainerRoundTripTable) {
  const Container cases[] = {
      {"c1",
       "sb",
       "app",
       ContainerState::kRunning,
       {"A=B", "DRA_CPUSET_x=1-2"},
       {{"k", "v"}},
       {"1-2", "0"},
       42},
      {"c2", "sb", "", ContainerState::kCreated, {}, {}, {"", ""}, 0},
      {"c3", "sb", "x", ContainerState::kStopped, {"E="}, {}, {"5", ""}, 1},
  };
  for (const Container& c : cases) {
    api::Container pb;
    ToProto(c, &pb);
    EXPECT_EQ(FromProto(pb), c) << c.id;
  }
}

TEST(Convert, UnknownContainerStateIsUnknown) {
  api::Container pb;
  pb.set_state(static_cast<api::ContainerState>(9));
  EXPECT_EQ(FromProto(pb).state, ContainerState::kUnknown);
}

TEST(Convert, CpusetUpdateRoundTrip) {
  const CpusetUpdate u{"c", {"3-4", "1"}, true};
  api::ContainerUpdate pb;
  ToProto(u, &pb);
  EXPECT_EQ(FromProto(pb), u);
}

TEST(Convert, CreateResultSetsOnlyWhatIsThere) {
  api::CreateContainerResponse empty;
  ToProto(CreateContainerResult{}, &empty);
  EXPECT_FALSE(empty.has_adjust());
  EXPECT_EQ(empty.update_size(), 0);

  api::CreateContainerResponse cpus_only;
  ToProto(CreateContainerResult{{"0-1", ""}, {{"other", {"2-7", ""}, false}}}, &cpus_only);
  EXPECT_EQ(cpus_only.adjust().linux().resources().cpu().cpus(), "0-1");
  EXPECT_EQ(cpus_only.adjust().linux().resources().cpu().mems(), "");
  EXPECT_FALSE(cpus_only.adjust().linux().resources().has_memory());
  ASSERT_EQ(cpus_only.update_size(), 1);
  EXPECT_EQ(cpus_only.update(0).container_id(), "other");
  EXPECT_EQ(cpus_only.update(0).linux().resources().cpu().cpus(), "2-7");
}

TEST(Convert, ConfigureRequest) {
  api::ConfigureRequest pb;
  pb.set_runtime_name("containerd");
  pb.set_runtime_version("2.1.4");
  pb.set_registration_timeout(5000);
  pb.set_request_timeout(2000);
  pb.set_config("cfg");
  const RuntimeInfo info = FromProto(pb);
  EXPECT_EQ(info, (RuntimeInfo{"containerd", "2.1.4", "", "cfg", std::chrono::milliseconds(5000),
                               std::chrono::milliseconds(2000)}));
}

}  // namespace
}  // namespace dracpu::nri
