// ReconnectingPlugin against the simulator: the runtime missing at start, dropping the plugin,
// and restarting; each time the plugin comes back, registers and gets a fresh Synchronize.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "nri-agent/nri/reconnecting_plugin.h"
#include "tests/sim/runtime/runtime_sim.h"
#include "tests/testing/quiet_plugin_handler.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::sim {
namespace {

using namespace std::chrono_literals;

class CountingHandler : public testing::QuietPluginHandler {
 public:
  Result<nri::EventMask> Configure(const nri::RuntimeInfo&) override {
    return nri::MaskOf(nri::Event::kCreateContainer);
  }
  Result<std::vector<nri::CpusetUpdate>> Synchronize(
      const std::vector<nri::Pod>&, const std::vector<nri::Container>& containers) override {
    sync_sizes.push_back(containers.size());
    return std::vector<nri::CpusetUpdate>{};
  }
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod&,
                                                     const nri::Container&) override {
    return nri::CreateContainerResult{{"0", ""}, {}};
  }
  void Disconnected(const Status& reason) override { disconnects.push_back(reason); }

  std::vector<size_t> sync_sizes;
  std::vector<Status> disconnects;
};

class ReconnectTest : public ::testing::Test {
 protected:
  ReconnectTest()
      : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {
    char dir[] = "/tmp/dracpu-rc-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    socket_ = dir_ + "/nri.sock";
    plugin_ = std::make_unique<nri::ReconnectingPlugin>(
        *loop_, [this] { return nri::ConnectNriSocket(socket_); }, nri::PluginOptions{}, handler_,
        BackoffPolicy{1ms, 8ms, 2.0, 0.0});
  }
  ~ReconnectTest() override {
    plugin_.reset();
    sim_.reset();
    ::unlink(socket_.c_str());
    ::rmdir(dir_.c_str());
  }
  void StartSim() {
    auto sim = RuntimeSimulator::Listen(*loop_, socket_, {});
    ASSERT_THAT(sim, IsOk());
    sim_ = std::move(sim).value();
  }
  template <typename Pred>
  void RunUntil(Pred done) {
    for (int i = 0; i < 100000 && !done(); ++i) ASSERT_THAT(loop_->RunOnce(100ms), IsOk());
    ASSERT_TRUE(done());
  }
  bool Synced() {
    return plugin_->state() == nri::Plugin::State::kSynchronized && sim_ &&
           sim_->plugin_state() == RuntimeSimulator::PluginState::kReady;
  }

  std::unique_ptr<loop::EventLoop> loop_;
  std::string dir_, socket_;
  CountingHandler handler_;
  std::unique_ptr<nri::ReconnectingPlugin> plugin_;
  std::unique_ptr<RuntimeSimulator> sim_;
};

TEST_F(ReconnectTest, BackoffDoublesUpToTheCapWhileTheRuntimeIsAbsent) {
  plugin_->Start();
  RunUntil([&] { return plugin_->failed_attempts() >= 5; });
  EXPECT_EQ(plugin_->next_delay(), 8ms);
  EXPECT_THAT(plugin_->last_error(), StatusIs(StatusCode::kNotFound));  // no socket yet
  EXPECT_EQ(plugin_->connections(), 0);
  StartSim();
  RunUntil([&] { return Synced(); });
  EXPECT_EQ(plugin_->connections(), 1);
  EXPECT_EQ(plugin_->next_delay(), 1ms);  // reset by the completed Synchronize
}

TEST_F(ReconnectTest, DroppedPluginReconnectsAndResynchronizes) {
  StartSim();
  sim_->AddRunning(nri::Pod{"sb", "p", "u", "ns", {}, {}},
                   nri::Container{"c1", "sb", "c", {}, {}, {}, {}, 0});
  plugin_->Start();
  RunUntil([&] { return Synced(); });
  sim_->DropPlugin(DeadlineExceededError("CreateContainer took too long"));
  RunUntil([&] { return handler_.disconnects.size() == 1; });
  RunUntil([&] { return Synced() && plugin_->connections() == 2; });
  EXPECT_THAT(handler_.sync_sizes, ::testing::ElementsAre(1u, 1u));
}

TEST_F(ReconnectTest, RuntimeRestartIsSurvived) {
  StartSim();
  plugin_->Start();
  RunUntil([&] { return Synced(); });
  sim_.reset();  // the runtime goes away: socket closed and removed
  RunUntil([&] { return handler_.disconnects.size() == 1; });
  const int failed_before = plugin_->failed_attempts();
  RunUntil([&] { return plugin_->failed_attempts() > failed_before; });  // it keeps trying
  StartSim();
  sim_->AddRunning(nri::Pod{"sb", "p", "u", "ns", {}, {}},
                   nri::Container{"c9", "sb", "c", {}, {}, {}, {}, 0});
  RunUntil([&] { return Synced(); });
  EXPECT_EQ(plugin_->connections(), 2);
  EXPECT_THAT(handler_.sync_sizes, ::testing::ElementsAre(0u, 1u));
  // And it pins again.
  std::optional<Status> created;
  sim_->CreateContainer(nri::Pod{"sb", "p", "u", "ns", {}, {}},
                        nri::Container{"new", "sb", "n", {}, {}, {}, {}, 0},
                        [&](const Status& s) { created = s; });
  RunUntil([&] { return created.has_value(); });
  EXPECT_THAT(*created, IsOk());
  EXPECT_EQ(sim_->containers().at("new").container.cpuset.cpus, "0");
}

TEST_F(ReconnectTest, UpdateContainersWhileDisconnectedFailsCleanly) {
  std::optional<Result<std::vector<nri::CpusetUpdate>>> got;
  plugin_->UpdateContainers({}, [&](auto r) { got = std::move(r); });
  EXPECT_FALSE(got.has_value());
  RunUntil([&] { return got.has_value(); });
  EXPECT_THAT(*got, StatusIs(StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace dracpu::sim
