// Our nri::Plugin against the runtime simulator over a real unix socket, and raw peers that
// break the rules (slow, silent, badly framed) to show the simulator drops them as containerd
// would.
#include "tests/sim/runtime/runtime_sim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "nri-agent/mux/ttrpc_peer.h"
#include "nri-agent/nri/convert.h"
#include "nri-agent/nri/plugin.h"
#include "nri-agent/ttrpc/envelope.h"
#include "nri-agent/ttrpc/frame.h"
#include "tests/testing/quiet_plugin_handler.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::sim {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
namespace api = ::nri::pkg::api::v1alpha1;

// Pins a container to the value of its PIN env var; shrinks "shared" to SHRINK if set.
class PinHandler : public testing::QuietPluginHandler {
 public:
  Result<nri::EventMask> Configure(const nri::RuntimeInfo& runtime) override {
    runtime_seen = runtime;
    return nri::MaskOf(nri::Event::kCreateContainer) | nri::MaskOf(nri::Event::kUpdateContainer) |
           nri::MaskOf(nri::Event::kStopContainer) | nri::MaskOf(nri::Event::kRemoveContainer);
  }
  Result<std::vector<nri::CpusetUpdate>> Synchronize(
      const std::vector<nri::Pod>&, const std::vector<nri::Container>& containers) override {
    synced = containers.size();
    return sync_updates;
  }
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod&,
                                                     const nri::Container& c) override {
    if (!refuse.ok()) return refuse;
    nri::CreateContainerResult r;
    for (const std::string& e : c.env) {
      if (e.rfind("PIN=", 0) == 0) r.adjust.cpus = e.substr(4);
    }
    if (!shrink.empty()) r.updates.push_back({"shared", {shrink, ""}, true});
    return r;
  }
  Result<std::vector<nri::CpusetUpdate>> UpdateContainer(const nri::Pod&, const nri::Container& c,
                                                         const nri::Cpuset&) override {
    // Re-assert whatever the container had.
    return std::vector<nri::CpusetUpdate>{{c.id, c.cpuset, false}};
  }
  Status RemoveContainer(const nri::Pod&, const nri::Container& c) override {
    removed.push_back(c.id);
    return Status::Ok();
  }
  void Disconnected(const Status& reason) override { disconnected = reason; }

  nri::RuntimeInfo runtime_seen;
  size_t synced = 0;
  std::vector<nri::CpusetUpdate> sync_updates;
  Status refuse;
  std::string shrink;
  std::vector<std::string> removed;
  std::optional<Status> disconnected;
};

class RuntimeSimTest : public ::testing::Test {
 protected:
  RuntimeSimTest()
      : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {
    char dir[] = "/tmp/dracpu-sim-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    socket_ = dir_ + "/nri.sock";
  }
  ~RuntimeSimTest() override {
    plugin_.reset();
    sim_.reset();
    ::unlink(socket_.c_str());
    ::rmdir(dir_.c_str());
  }

  void StartSim(RuntimeOptions options = {}) {
    auto sim = RuntimeSimulator::Listen(*loop_, socket_, options);
    ASSERT_THAT(sim, IsOk());
    sim_ = std::move(sim).value();
  }
  void StartPlugin() {
    auto fd = nri::ConnectNriSocket(socket_);
    ASSERT_THAT(fd, IsOk());
    auto plugin = nri::Plugin::Start(*loop_, std::move(fd).value(), {}, handler_);
    ASSERT_THAT(plugin, IsOk());
    plugin_ = std::move(plugin).value();
  }
  template <typename Pred>
  void RunUntil(Pred done) {
    for (int i = 0; i < 100000 && !done(); ++i) ASSERT_THAT(loop_->RunOnce(100ms), IsOk());
    ASSERT_TRUE(done());
  }
  // Stops early when the plugin was dropped, so a broken framing fails here, not by hanging.
  void WaitReady() {
    RunUntil([&] {
      return sim_->plugin_state() == RuntimeSimulator::PluginState::kReady ||
             handler_.disconnected.has_value();
    });
    ASSERT_EQ(sim_->plugin_state(), RuntimeSimulator::PluginState::kReady)
        << "plugin dropped: " << sim_->last_drop().ToString();
  }
  Status Create(const std::string& id, std::vector<std::string> env) {
    std::optional<Status> result;
    nri::Container c;
    c.id = id;
    c.env = std::move(env);
    sim_->CreateContainer(nri::Pod{"sb-" + id, id, "uid-" + id, "ns", {}, {}}, c,
                          [&](const Status& s) { result = s; });
    RunUntil([&] { return result.has_value(); });
    return *result;
  }
  std::string CpusOf(const std::string& id) {
    return sim_->containers().at(id).container.cpuset.cpus;
  }

  std::unique_ptr<loop::EventLoop> loop_;
  std::string dir_, socket_;
  std::unique_ptr<RuntimeSimulator> sim_;
  PinHandler handler_;
  std::unique_ptr<nri::Plugin> plugin_;
};

TEST_F(RuntimeSimTest, RegistersSynchronizesAndPins) {
  StartSim();
  sim_->AddRunning(nri::Pod{"sb0", "p0", "u0", "ns", {}, {}},
                   nri::Container{"shared", "sb0", "c", {}, {}, {}, {"0-7", ""}, 1});
  handler_.sync_updates = {{"shared", {"0-5", ""}, false}};
  StartPlugin();
  WaitReady();
  EXPECT_EQ(sim_->plugin_id(), "00-dra.cpu");
  EXPECT_EQ(handler_.runtime_seen.runtime_name, "containerd");
  EXPECT_EQ(handler_.synced, 1u);
  EXPECT_EQ(CpusOf("shared"), "0-5");  // the Synchronize update was applied
  EXPECT_EQ(sim_->sync_chunks(), 1);

  handler_.shrink = "0-3";
  ASSERT_THAT(Create("excl", {"A=1", "PIN=6-7"}), IsOk());
  EXPECT_EQ(CpusOf("excl"), "6-7");
  EXPECT_EQ(CpusOf("shared"), "0-3");

  std::optional<Status> updated;
  sim_->UpdateContainer("excl", nri::Cpuset{"0-7", ""}, [&](const Status& s) { updated = s; });
  RunUntil([&] { return updated.has_value(); });
  EXPECT_THAT(*updated, IsOk());
  EXPECT_EQ(CpusOf("excl"), "6-7");  // re-asserted by the plugin
}

TEST_F(RuntimeSimTest, PluginErrorFailsTheCreation) {
  StartSim();
  StartPlugin();
  WaitReady();
  handler_.refuse = PermissionDeniedError("DRA_CPUSET_x: claim not prepared");
  EXPECT_THAT(Create("forged", {}), StatusIs(StatusCode::kPermissionDenied, HasSubstr("claim")));
  EXPECT_EQ(sim_->containers().count("forged"), 0u);
  EXPECT_EQ(sim_->plugin_state(), RuntimeSimulator::PluginState::kReady);  // not fatal
}

TEST_F(RuntimeSimTest, SynchronizeOverFourMiBIsChunked) {
  StartSim();
  const std::string big_env = "X=" + std::string(4000, 'e');
  for (int i = 0; i < 1500; ++i) {  // ~6 MB of containers
    const std::string id = "c" + std::to_string(i);
    sim_->AddRunning(nri::Pod{"sb", "p", "u", "ns", {}, {}},
                     nri::Container{id, "sb", id, {}, {big_env}, {}, {}, 0});
  }
  StartPlugin();
  WaitReady();
  EXPECT_GT(sim_->sync_chunks(), 1);
  EXPECT_EQ(handler_.synced, 1500u);
}

TEST_F(RuntimeSimTest, RemoveGoesAsStateChangeBeforeNri012AndDedicatedAfter) {
  for (const char* version : {"v0.8.0", "v0.12.0"}) {
    SCOPED_TRACE(version);
    plugin_.reset();
    sim_.reset();
    handler_.removed.clear();
    RuntimeOptions options;
    options.nri_version = version;
    StartSim(options);
    StartPlugin();
    WaitReady();
    ASSERT_THAT(Create("c", {}), IsOk());
    std::optional<Status> removed;
    sim_->RemoveContainer("c", [&](const Status& s) { removed = s; });
    RunUntil([&] { return removed.has_value(); });
    EXPECT_THAT(*removed, IsOk());
    EXPECT_THAT(handler_.removed, ::testing::ElementsAre("c"));
  }
}

TEST_F(RuntimeSimTest, UnsolicitedUpdateContainersAppliedAndUnknownReportedFailed) {
  StartSim();
  StartPlugin();
  WaitReady();
  ASSERT_THAT(Create("a", {}), IsOk());
  std::optional<Result<std::vector<nri::CpusetUpdate>>> failed;
  plugin_->UpdateContainers({{"a", {"1-2", ""}, true}, {"ghost", {"1-2", ""}, true}},
                            [&](auto r) { failed = std::move(r); });
  RunUntil([&] { return failed.has_value(); });
  ASSERT_THAT(*failed, IsOk());
  ASSERT_EQ((*failed)->size(), 1u);
  EXPECT_EQ((**failed)[0].container_id, "ghost");
  EXPECT_EQ(CpusOf("a"), "1-2");
}

TEST_F(RuntimeSimTest, RuntimeRestartDisconnectsThePlugin) {
  StartSim();
  StartPlugin();
  WaitReady();
  sim_->DropPlugin(UnavailableError("runtime restarts"));
  RunUntil([&] { return handler_.disconnected.has_value(); });
  EXPECT_THAT(*handler_.disconnected, StatusIs(StatusCode::kUnavailable));
  // A new connection is served again (reconnect).
  handler_.disconnected.reset();
  StartPlugin();
  WaitReady();
}

// A raw plugin: our transport without the adapter, so it can misbehave.
class RawPlugin {
 public:
  RawPlugin(loop::EventLoop& loop, const std::string& socket) {
    auto fd = nri::ConnectNriSocket(socket);
    EXPECT_THAT(fd, IsOk());
    auto peer = mux::TtrpcPeer::ForPlugin(loop, std::move(fd).value(),
                                          [this](const Status& s) { closed = s; });
    EXPECT_THAT(peer, IsOk());
    this->peer = std::move(peer).value();
  }
  void Register() {
    api::RegisterPluginRequest req;
    req.set_plugin_name("raw");
    req.set_plugin_idx("10");
    peer->client().Call(nri::kRuntimeService, "RegisterPlugin", req.SerializeAsString(), 5s,
                        [](Result<std::string>) {});
  }
  std::unique_ptr<mux::TtrpcPeer> peer;
  std::optional<Status> closed;
};

TEST_F(RuntimeSimTest, NoRegistrationInTimeDropsTheConnection) {
  RuntimeOptions options;
  options.registration_timeout = 20ms;
  StartSim(options);
  RawPlugin raw(*loop_, socket_);
  RunUntil([&] { return raw.closed.has_value(); });
  EXPECT_THAT(sim_->last_drop(), StatusIs(StatusCode::kDeadlineExceeded));
  EXPECT_EQ(sim_->plugin_state(), RuntimeSimulator::PluginState::kNone);
}

TEST_F(RuntimeSimTest, SlowPluginIsDroppedAndTheEventGoesOnWithoutIt) {
  RuntimeOptions options;
  options.request_timeout = 20ms;
  StartSim(options);
  RawPlugin raw(*loop_, socket_);
  // Configure is never answered.
  raw.peer->server().Register(nri::kPluginService, "Configure",
                              [](const ttrpc::CallInfo&, std::string, ttrpc::Responder) {});
  raw.Register();
  RunUntil([&] { return raw.closed.has_value(); });
  EXPECT_THAT(sim_->last_drop(), StatusIs(StatusCode::kDeadlineExceeded, HasSubstr("Configure")));
  EXPECT_THAT(Create("c", {"PIN=1"}), IsOk());  // created, unpinned
  EXPECT_EQ(CpusOf("c"), "");
}

TEST_F(RuntimeSimTest, OneFrameOverFourKiBStartingWithAHeaderKillsTheRuntimeServerSilently) {
  // A well-formed RegisterPlugin of over 4096 bytes. Split as AppendMessageFrames does, it
  // registers; as one mux frame, Go's reader fails with ENOMEM, the runtime's server for this
  // plugin dies, the socket stays open until the registration timeout closes it.
  api::RegisterPluginRequest req;
  req.set_plugin_name("raw");
  req.set_plugin_idx("10");
  req.set_nri_version(std::string(5000, 'v'));
  const std::string message = *ttrpc::EncodeFrame(
      1, ttrpc::MessageType::kRequest, 0,
      ttrpc::EncodeRequest(
          {nri::kRuntimeService, "RegisterPlugin", req.SerializeAsString(), 0, {}}));
  for (bool one_frame : {false, true}) {
    SCOPED_TRACE(one_frame);
    sim_.reset();
    RuntimeOptions options;
    options.registration_timeout = 50ms;
    StartSim(options);
    auto fd = nri::ConnectNriSocket(socket_);
    ASSERT_THAT(fd, IsOk());
    std::string wire;
    if (one_frame) {
      wire.resize(mux::kFrameHeaderSize);
      mux::EncodeFrameHeader(
          mux::FrameHeader{mux::kRuntimeServiceConn, static_cast<uint32_t>(message.size())},
          wire.data());
      wire += message;
    } else {
      ASSERT_THAT(mux::AppendMessageFrames(mux::kRuntimeServiceConn, message, &wire), IsOk());
    }
    ASSERT_EQ(::write(fd->get(), wire.data(), wire.size()), static_cast<ssize_t>(wire.size()));
    if (!one_frame) {
      RunUntil([&] { return sim_->plugin_id() == "10-raw"; });
      EXPECT_FALSE(sim_->runtime_server_dead());
      continue;
    }
    RunUntil([&] { return sim_->runtime_server_dead(); });
    EXPECT_EQ(sim_->plugin_id(), "");  // the request never reached the server
    RunUntil([&] { return sim_->plugin_state() == RuntimeSimulator::PluginState::kNone; });
    EXPECT_THAT(sim_->last_drop(), StatusIs(StatusCode::kDeadlineExceeded));
    char b;
    EXPECT_EQ(::read(fd->get(), &b, 1), 0);  // EOF: the runtime closed it
  }
}

TEST_F(RuntimeSimTest, DedicatedRemoveAnsweredUnimplementedFallsBackToStateChangeForGood) {
  RuntimeOptions options;
  options.nri_version = "v0.12.0";
  StartSim(options);
  RawPlugin raw(*loop_, socket_);
  int dedicated = 0;
  std::vector<std::string> state_changes;
  raw.peer->server().Register(nri::kPluginService, "Configure",
                              [](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) {
                                api::ConfigureResponse resp;
                                resp.set_events(nri::MaskOf(nri::Event::kRemoveContainer));
                                done(resp.SerializeAsString());
                              });
  raw.peer->server().Register(nri::kPluginService, "Synchronize",
                              [](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) {
                                done(api::SynchronizeResponse().SerializeAsString());
                              });
  raw.peer->server().Register(nri::kPluginService, "RemoveContainer",
                              [&](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) {
                                ++dedicated;
                                done(UnimplementedError("method RemoveContainer"));
                              });
  raw.peer->server().Register(nri::kPluginService, "StateChange",
                              [&](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) {
                                api::StateChangeEvent ev;
                                ASSERT_TRUE(ev.ParseFromString(p));
                                EXPECT_EQ(ev.event(), api::REMOVE_CONTAINER);
                                state_changes.push_back(ev.container().id());
                                done(api::Empty().SerializeAsString());
                              });
  raw.Register();
  WaitReady();
  ASSERT_THAT(Create("a", {}), IsOk());
  ASSERT_THAT(Create("b", {}), IsOk());
  for (const char* id : {"a", "b"}) {
    std::optional<Status> removed;
    sim_->RemoveContainer(id, [&](const Status& s) { removed = s; });
    RunUntil([&] { return removed.has_value(); });
    EXPECT_THAT(*removed, IsOk());
  }
  EXPECT_EQ(dedicated, 1);
  EXPECT_THAT(state_changes, ::testing::ElementsAre("a", "b"));
}

TEST_F(RuntimeSimTest, AppliesCpusetsToRealProcessesWhenAsked) {
  // One CPU this test may run on (a container may not own CPU 0).
  cpu_set_t own;
  ASSERT_EQ(::sched_getaffinity(0, sizeof(own), &own), 0);
  int cpu = -1;
  for (int i = 0; i < CPU_SETSIZE && cpu < 0; ++i) {
    if (CPU_ISSET(i, &own)) cpu = i;
  }
  ASSERT_GE(cpu, 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  RuntimeOptions options;
  options.apply_affinity = true;
  StartSim(options);
  StartPlugin();
  WaitReady();
  std::optional<Status> result;
  nri::Container c;
  c.id = "real";
  c.env = {"PIN=" + std::to_string(cpu)};
  c.pid = static_cast<uint32_t>(child);
  sim_->CreateContainer(nri::Pod{"sb", "p", "u", "ns", {}, {}}, c,
                        [&](const Status& s) { result = s; });
  RunUntil([&] { return result.has_value(); });
  EXPECT_THAT(*result, IsOk());
  EXPECT_THAT(sim_->affinity_error(), IsOk());
  EXPECT_EQ(sim_->affinity_applied(), 1);
  cpu_set_t got;
  ASSERT_EQ(::sched_getaffinity(child, sizeof(got), &got), 0);
  EXPECT_EQ(CPU_COUNT(&got), 1);
  EXPECT_TRUE(CPU_ISSET(cpu, &got));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_F(RuntimeSimTest, LargeRepliesAndRequestsFromOurPluginPassGosReader) {
  // Both directions carry messages well over 4096 bytes: the Synchronize answer on connection 1
  // and an UpdateContainers call on connection 2. Go's reader (emulated) accepts them only if
  // the plugin frames them as 4096 + rest.
  StartSim();
  for (int i = 0; i < 2000; ++i) {
    const std::string id = "c" + std::to_string(i);
    sim_->AddRunning(nri::Pod{"sb", "p", "u", "ns", {}, {}},
                     nri::Container{id, "sb", id, {}, {}, {}, {"0-63", ""}, 0});
    handler_.sync_updates.push_back({id, {"0-31", ""}, false});
  }
  StartPlugin();
  WaitReady();
  EXPECT_EQ(CpusOf("c1999"), "0-31");
  std::vector<nri::CpusetUpdate> updates;
  for (int i = 0; i < 2000; ++i) updates.push_back({"c" + std::to_string(i), {"32-63", ""}, true});
  std::optional<Result<std::vector<nri::CpusetUpdate>>> failed;
  plugin_->UpdateContainers(updates, [&](auto r) { failed = std::move(r); });
  RunUntil([&] { return failed.has_value(); });
  ASSERT_THAT(*failed, IsOk());
  EXPECT_TRUE((*failed)->empty());
  EXPECT_EQ(CpusOf("c0"), "32-63");
  EXPECT_FALSE(sim_->runtime_server_dead());
  EXPECT_EQ(sim_->plugin_state(), RuntimeSimulator::PluginState::kReady);
}

TEST(NriVersion, MinorTable) {
  const std::pair<const char*, int> cases[] = {{"v0.8.0", 8},  {"0.12.1", 12}, {"v0.10", 10},
                                               {"v1.0.0", -1}, {"", -1},       {"unknown", -1}};
  for (const auto& [v, want] : cases) EXPECT_EQ(NriMinorVersion(v), want) << v;
}

}  // namespace
}  // namespace dracpu::sim
