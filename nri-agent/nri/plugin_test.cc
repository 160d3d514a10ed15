// Plugin against a scripted runtime: a TtrpcPeer on the other end of a socketpair that speaks
// the runtime's side of NRI with the generated messages, on the same event loop.
#include "nri-agent/nri/plugin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "nri-agent/mux/ttrpc_peer.h"
#include "nri-agent/nri/convert.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::nri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Records every call and answers from scripted values.
class FakeHandler : public PluginHandler {
 public:
  Result<EventMask> Configure(const RuntimeInfo& runtime) override {
    calls.push_back("Configure");
    configured = runtime;
    return events;
  }
  Result<std::vector<CpusetUpdate>> Synchronize(const std::vector<Pod>& pods,
                                                const std::vector<Container>& containers) override {
    calls.push_back("Synchronize");
    synced_pods = pods;
    synced_containers = containers;
    return sync_updates;
  }
  Result<CreateContainerResult> CreateContainer(const Pod& pod, const Container& c) override {
    calls.push_back("CreateContainer " + pod.uid + " " + c.id);
    if (!create_error.ok()) return create_error;
    return create_result;
  }
  Result<std::vector<CpusetUpdate>> UpdateContainer(const Pod&, const Container& c,
                                                    const Cpuset& requested) override {
    calls.push_back("UpdateContainer " + c.id + " " + requested.cpus);
    return std::vector<CpusetUpdate>{{c.id, {"0-1", ""}, false}};
  }
  Result<std::vector<CpusetUpdate>> StopContainer(const Pod&, const Container& c) override {
    calls.push_back("StopContainer " + c.id);
    return std::vector<CpusetUpdate>{};
  }
  Status RemoveContainer(const Pod&, const Container& c) override {
    calls.push_back("RemoveContainer " + c.id);
    return Status::Ok();
  }
  void Disconnected(const Status& reason) override {
    calls.push_back("Disconnected");
    disconnected = reason;
  }

  std::vector<std::string> calls;
  EventMask events = MaskOf(Event::kCreateContainer) | MaskOf(Event::kStopContainer) |
                     MaskOf(Event::kRemoveContainer);
  RuntimeInfo configured;
  std::vector<Pod> synced_pods;
  std::vector<Container> synced_containers;
  std::vector<CpusetUpdate> sync_updates;
  CreateContainerResult create_result;
  Status create_error;
  std::optional<Status> disconnected;
};

class PluginTest : public ::testing::Test {
 protected:
  PluginTest() : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    plugin_fd_ = UniqueFd(sv[0]);
    auto runtime = mux::TtrpcPeer::ForRuntime(*loop_, UniqueFd(sv[1]), nullptr);
    EXPECT_THAT(runtime, IsOk());
    runtime_ = std::move(runtime).value();
    runtime_->server().Register(
        kRuntimeService, "RegisterPlugin",
        [this](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) {
          api::RegisterPluginRequest req;
          ASSERT_TRUE(req.ParseFromString(p));
          registered_as_ = req.plugin_idx() + "-" + req.plugin_name();
          register_done_ = std::move(done);
        });
  }

  void StartPlugin(PluginOptions options = {}) {
    auto plugin = Plugin::Start(*loop_, std::move(plugin_fd_), options, handler_);
    ASSERT_THAT(plugin, IsOk());
    plugin_ = std::move(plugin).value();
  }

  template <typename Pred>
  void RunUntil(Pred done) {
    for (int i = 0; i < 100000 && !done(); ++i) ASSERT_THAT(loop_->RunOnce(100ms), IsOk());
    ASSERT_TRUE(done());
  }

  // Calls the plugin like the runtime does; returns the raw answer.
  template <typename Resp>
  Result<Resp> CallPlugin(const std::string& method, const google::protobuf::Message& req) {
    std::optional<Result<std::string>> got;
    runtime_->client().Call(kPluginService, method, req.SerializeAsString(), 2s,
                            [&](Result<std::string> r) { got = std::move(r); });
    RunUntil([&] { return got.has_value(); });
    if (!got->ok()) return got->status();
    Resp resp;
    if (!resp.ParseFromString(**got)) return DataLossError("bad answer");
    return resp;
  }

  // Registration as containerd does it: Configure before answering RegisterPlugin.
  void Register() {
    StartPlugin();
    RunUntil([&] { return register_done_ != nullptr; });
    api::ConfigureRequest configure;
    configure.set_runtime_name("containerd");
    configure.set_runtime_version("2.1.0");
    configure.set_request_timeout(2000);
    auto resp = CallPlugin<api::ConfigureResponse>("Configure", configure);
    ASSERT_THAT(resp, IsOk());
    register_done_(std::string());
    RunUntil([&] {
      return plugin_->state() == Plugin::State::kRegistered ||
             plugin_->state() == Plugin::State::kConfigured;
    });
  }

  std::unique_ptr<loop::EventLoop> loop_;
  UniqueFd plugin_fd_;
  std::unique_ptr<mux::TtrpcPeer> runtime_;
  FakeHandler handler_;
  std::unique_ptr<Plugin> plugin_;
  std::string registered_as_;
  ttrpc::Responder register_done_;
};

TEST_F(PluginTest, RegistersAndIsConfiguredBeforeTheRegisterReply) {
  StartPlugin();
  RunUntil([&] { return register_done_ != nullptr; });
  EXPECT_EQ(registered_as_, "00-dra.cpu");
  EXPECT_EQ(plugin_->state(), Plugin::State::kRegistering);
  api::ConfigureRequest configure;
  configure.set_runtime_name("containerd");
  configure.set_runtime_version("2.1.0");
  configure.set_registration_timeout(5000);
  configure.set_request_timeout(2000);
  auto resp = CallPlugin<api::ConfigureResponse>("Configure", configure);
  ASSERT_THAT(resp, IsOk());
  EXPECT_EQ(resp->events(), 0x608);
  EXPECT_EQ(plugin_->state(), Plugin::State::kConfigured);
  EXPECT_EQ(plugin_->runtime().runtime_name, "containerd");
  EXPECT_EQ(handler_.configured.request_timeout, 2000ms);
  register_done_(std::string());
  for (int i = 0; i < 5; ++i) ASSERT_THAT(loop_->RunOnce(0ms), IsOk());
  EXPECT_EQ(plugin_->state(), Plugin::State::kConfigured);  // not set back to kRegistered
  EXPECT_FALSE(handler_.disconnected.has_value());
}

TEST_F(PluginTest, EventMaskOutsideOldRuntimesOrEmptyIsRefused) {
  for (EventMask bad : {0, 0x800, 0x1000 | 0x8}) {
    handler_.events = bad;
    api::ConfigureRequest configure;
    if (!plugin_) StartPlugin();
    auto resp = CallPlugin<api::ConfigureResponse>("Configure", configure);
    EXPECT_THAT(resp, StatusIs(StatusCode::kFailedPrecondition)) << bad;
  }
}

TEST_F(PluginTest, ChunkedSynchronizeIsAcknowledgedThenHandledOnce) {
  Register();
  handler_.sync_updates = {{"c1", {"4-5", ""}, false}};
  api::SynchronizeRequest first;
  first.set_more(true);
  ToProto(Pod{"sb1", "p1", "u1", "ns", {}, {}}, first.add_pods());
  ToProto(Container{"c1", "sb1", "a", ContainerState::kRunning, {"X=1"}, {}, {"0-7", ""}, 1},
          first.add_containers());
  auto ack = CallPlugin<api::SynchronizeResponse>("Synchronize", first);
  ASSERT_THAT(ack, IsOk());
  EXPECT_TRUE(ack->more());
  EXPECT_EQ(ack->update_size(), 0);
  EXPECT_THAT(handler_.calls, ElementsAre("Configure"));  // not yet

  api::SynchronizeRequest last;
  ToProto(Container{"c2", "sb1", "b", ContainerState::kRunning, {}, {}, {}, 2},
          last.add_containers());
  auto done = CallPlugin<api::SynchronizeResponse>("Synchronize", last);
  ASSERT_THAT(done, IsOk());
  EXPECT_FALSE(done->more());
  ASSERT_EQ(done->update_size(), 1);
  EXPECT_EQ(done->update(0).container_id(), "c1");
  EXPECT_EQ(done->update(0).linux().resources().cpu().cpus(), "4-5");
  EXPECT_THAT(handler_.calls, ElementsAre("Configure", "Synchronize"));
  ASSERT_EQ(handler_.synced_pods.size(), 1u);
  ASSERT_EQ(handler_.synced_containers.size(), 2u);
  EXPECT_EQ(handler_.synced_containers[0].cpuset.cpus, "0-7");
  EXPECT_EQ(handler_.synced_containers[1].id, "c2");
  EXPECT_EQ(plugin_->state(), Plugin::State::kSynchronized);
}

TEST_F(PluginTest, CreateContainerAdjustsAndUpdatesOthers) {
  Register();
  handler_.create_result = {{"2-3", "0"}, {{"shared1", {"4-7", ""}, true}}};
  api::CreateContainerRequest req;
  ToProto(Pod{"sb", "p", "uid9", "ns", {}, {}}, req.mutable_pod());
  ToProto(Container{"new", "sb", "a", ContainerState::kCreated, {"DRA_CPUSET_u=2-3"}, {}, {}, 0},
          req.mutable_container());
  auto resp = CallPlugin<api::CreateContainerResponse>("CreateContainer", req);
  ASSERT_THAT(resp, IsOk());
  EXPECT_EQ(resp->adjust().linux().resources().cpu().cpus(), "2-3");
  EXPECT_EQ(resp->adjust().linux().resources().cpu().mems(), "0");
  ASSERT_EQ(resp->update_size(), 1);
  EXPECT_EQ(resp->update(0).container_id(), "shared1");
  EXPECT_TRUE(resp->update(0).ignore_failure());
  EXPECT_THAT(handler_.calls, ElementsAre("Configure", "CreateContainer uid9 new"));
}

TEST_F(PluginTest, CreateContainerErrorReachesTheRuntimeWithItsMessage) {
  Register();
  handler_.create_error = PermissionDeniedError("claim u not prepared");
  api::CreateContainerRequest req;
  req.mutable_container()->set_id("forged");
  EXPECT_THAT(CallPlugin<api::CreateContainerResponse>("CreateContainer", req),
              StatusIs(StatusCode::kPermissionDenied, "claim u not prepared"));
}

TEST_F(PluginTest, PolicyUpdatingTheContainerBeingCreatedIsAnError) {
  Register();
  handler_.create_result = {{"1", ""}, {{"new", {"1", ""}, false}}};
  api::CreateContainerRequest req;
  req.mutable_container()->set_id("new");
  EXPECT_THAT(CallPlugin<api::CreateContainerResponse>("CreateContainer", req),
              StatusIs(StatusCode::kInternal, HasSubstr("being created")));
}

TEST_F(PluginTest, EventsDispatchAndStateChangeRemoveFallsBackToRemoveContainer) {
  Register();
  api::UpdateContainerRequest update;
  update.mutable_container()->set_id("c");
  update.mutable_linux_resources()->mutable_cpu()->set_cpus("0-63");
  auto u = CallPlugin<api::UpdateContainerResponse>("UpdateContainer", update);
  ASSERT_THAT(u, IsOk());
  ASSERT_EQ(u->update_size(), 1);
  EXPECT_EQ(u->update(0).linux().resources().cpu().cpus(), "0-1");

  api::StopContainerRequest stop;
  stop.mutable_container()->set_id("c");
  ASSERT_THAT(CallPlugin<api::StopContainerResponse>("StopContainer", stop), IsOk());
  api::RemoveContainerRequest remove;
  remove.mutable_container()->set_id("c");
  ASSERT_THAT(CallPlugin<api::RemoveContainerResponse>("RemoveContainer", remove), IsOk());
  api::StateChangeEvent ev;
  ev.set_event(api::REMOVE_CONTAINER);
  ev.mutable_container()->set_id("d");
  ASSERT_THAT(CallPlugin<api::Empty>("StateChange", ev), IsOk());
  ev.set_event(api::START_CONTAINER);
  ASSERT_THAT(CallPlugin<api::Empty>("StateChange", ev), IsOk());
  EXPECT_THAT(CallPlugin<api::Empty>("RunPodSandbox", api::Empty()),
              StatusIs(StatusCode::kUnimplemented));
  EXPECT_THAT(handler_.calls, ElementsAre("Configure", "UpdateContainer c 0-63", "StopContainer c",
                                          "RemoveContainer c", "RemoveContainer d"));
}

TEST_F(PluginTest, UnsolicitedUpdateContainersIsAsynchronous) {
  ttrpc::Responder held;
  api::UpdateContainersRequest seen;
  runtime_->server().Register(kRuntimeService, "UpdateContainers",
                              [&](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) {
                                ASSERT_TRUE(seen.ParseFromString(p));
                                held = std::move(done);
                              });
  // Before registration: refused, and not from inside the call.
  StartPlugin();
  std::optional<Result<std::vector<CpusetUpdate>>> early;
  plugin_->UpdateContainers({}, [&](auto r) { early = std::move(r); });
  EXPECT_FALSE(early.has_value());
  RunUntil([&] { return early.has_value(); });
  EXPECT_THAT(*early, StatusIs(StatusCode::kFailedPrecondition));
  RunUntil([&] { return register_done_ != nullptr; });
  register_done_(std::string());
  RunUntil([&] { return plugin_->state() == Plugin::State::kRegistered; });

  std::optional<Result<std::vector<CpusetUpdate>>> got;
  plugin_->UpdateContainers({{"s1", {"0-3", ""}, true}, {"s2", {"0-3", ""}, true}},
                            [&](auto r) { got = std::move(r); });
  RunUntil([&] { return held != nullptr; });
  ASSERT_EQ(seen.update_size(), 2);
  // While the runtime sits on UpdateContainers, events are still served.
  api::StopContainerRequest stop;
  stop.mutable_container()->set_id("x");
  ASSERT_THAT(CallPlugin<api::StopContainerResponse>("StopContainer", stop), IsOk());
  EXPECT_FALSE(got.has_value());
  api::UpdateContainersResponse resp;
  resp.add_failed()->set_container_id("s2");
  held(resp.SerializeAsString());
  RunUntil([&] { return got.has_value(); });
  ASSERT_THAT(*got, IsOk());
  ASSERT_EQ((*got)->size(), 1u);
  EXPECT_EQ((**got)[0].container_id, "s2");
}

TEST_F(PluginTest, RegistrationRefusedDisconnects) {
  StartPlugin();
  RunUntil([&] { return register_done_ != nullptr; });
  register_done_(InvalidArgumentError("invalid plugin index"));
  RunUntil([&] { return handler_.disconnected.has_value(); });
  EXPECT_THAT(*handler_.disconnected,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("RegisterPlugin")));
  EXPECT_EQ(plugin_->state(), Plugin::State::kClosed);
}

TEST_F(PluginTest, RuntimeGoingAwayDisconnectsOnce) {
  Register();
  runtime_->Close(Status(StatusCode::kCancelled, "runtime restarts"));
  RunUntil([&] { return handler_.disconnected.has_value(); });
  EXPECT_THAT(*handler_.disconnected, StatusIs(StatusCode::kUnavailable));
  plugin_->Close(InternalError("again"));
  EXPECT_EQ(std::count(handler_.calls.begin(), handler_.calls.end(), "Disconnected"), 1);
}

TEST(PluginIdentity, ValidationTable) {
  const std::tuple<const char*, const char*, bool> cases[] = {
      {"dra.cpu", "00", true},   {"a_b+c-d.9", "99", true}, {"", "00", false},
      {"dra/cpu", "00", false},  {"dra cpu", "00", false},  {"dra.cpu", "0", false},
      {"dra.cpu", "000", false}, {"dra.cpu", "a0", false},
  };
  for (const auto& [name, index, ok] : cases) {
    EXPECT_EQ(ValidatePluginIdentity(name, index).ok(), ok) << name << " " << index;
  }
}

TEST(PluginSocket, AdoptFromEnvTable) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd other(sv[1]);
  EXPECT_THAT(AdoptPluginSocket(std::to_string(sv[0])), IsOk());  // now owned and closed
  for (const char* bad : {"", "x", "3x", "-1", "99999"}) {
    EXPECT_FALSE(AdoptPluginSocket(bad).ok()) << bad;
  }
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  UniqueFd r(pipefd[0]), w(pipefd[1]);
  EXPECT_THAT(AdoptPluginSocket(std::to_string(pipefd[0])),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a socket")));
}

TEST(PluginSocket, ConnectErrors) {
  EXPECT_THAT(ConnectNriSocket(std::string(200, 'x')), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(ConnectNriSocket("/nonexistent-dracpu-test/nri.sock"),
              StatusIs(StatusCode::kNotFound));
}

}  // namespace
}  // namespace dracpu::nri
