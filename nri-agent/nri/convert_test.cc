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

// The direct encoders write exactly the generated serializer's bytes, so the runtime (Go's
// protobuf) reads the same message: every combination of adjust, cpusets, mems, ignore_failure,
// an empty id, one cpuset for many containers and several distinct ones.
TEST(Convert, DirectEncodingIsTheGeneratedSerialization) {
  std::vector<CpusetUpdate> pool_change;
  for (int i = 0; i < 300; ++i) {
    pool_change.push_back(
        {"container-" + std::to_string(i) + std::string(60, 'f'), {"0-19,40-47,58-63", ""}, true});
  }
  const std::vector<std::vector<CpusetUpdate>> update_lists = {
      {},
      pool_change,
      {{"a", {"1-3", ""}, false},
       {"b", {"1-3", "0"}, false},
       {"c", {"1-3", ""}, true},
       {"", {"4", ""}, false},
       {"d", {"", "1"}, true},
       {"e", {"", ""}, false},
       {"f", {"1-3", ""}, false},
       {std::string(200, 'g'), {"1-3", ""}, false}},  // lengths of two varint bytes
  };
  const Cpuset adjusts[] = {{"", ""}, {"2-3", ""}, {"2-3", "0-1"}, {"", "1"}};
  for (const auto& updates : update_lists) {
    for (const Cpuset& adjust : adjusts) {
      const CreateContainerResult result{adjust, updates};
      api::CreateContainerResponse generated;
      ToProto(result, &generated);
      EXPECT_EQ(SerializeCreateContainerResponse(result), generated.SerializeAsString())
          << updates.size() << " updates, adjust " << adjust.cpus << "/" << adjust.mems;
    }
    api::UpdateContainerResponse update;
    api::StopContainerResponse stop;
    for (const CpusetUpdate& u : updates) {
      ToProto(u, update.add_update());
      ToProto(u, stop.add_update());
    }
    EXPECT_EQ(SerializeUpdatesResponse(updates), update.SerializeAsString());
    EXPECT_EQ(SerializeUpdatesResponse(updates), stop.SerializeAsString());
    api::CreateContainerResponse back;
    ASSERT_TRUE(back.ParseFromString(SerializeCreateContainerResponse({{}, updates})));
    ASSERT_EQ(back.update_size(), static_cast<int>(updates.size()));
    for (size_t i = 0; i < updates.size(); ++i) {
      EXPECT_EQ(FromProto(back.update(static_cast<int>(i))), updates[i]);
    }
  }
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
