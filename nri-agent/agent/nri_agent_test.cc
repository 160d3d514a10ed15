// NriAgent's unit test: the agent and the runtime simulator's in-process pieces on one event
// loop that runs on a FakeClock (NriEnv), over a unix socket in a temp dir, with
// a shared-memory segment the test writes as the dra-agent would. Time moves only when the test
// advances it: start, a CreateContainer (shared and exclusive), a stalled loop seen by
// healthy(), shutdown, all in milliseconds. (tests/integration/nri_agent_test.cc runs the same
// parts on real time, restarts and a killed agent process.)
#include "nri-agent/agent/nri_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/event_loop.h"
#include "nri-agent/nri/plugin.h"
#include "tests/sim/runtime/runtime_sim.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/policy_test_util.h"

namespace dracpu::agent {
namespace {

using namespace std::chrono_literals;
using policy::testing::ClaimVar;
using policy::testing::MakeContainer;
using policy::testing::MakePod;
using policy::testing::SegmentPair;

class NriAgentUnitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = loop::EventLoop::Create(clock_);
    ASSERT_TRUE(l.ok());
    loop_ = std::move(*l);
    socket_ = seg_.dir() + "/nri.sock";
    auto s = sim::RuntimeSimulator::Listen(*loop_, socket_, {});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sim_ = std::move(*s);
  }
  void TearDown() override {
    if (agent_) agent_->Shutdown();
    agent_.reset();
    sim_.reset();
  }

  void StartAgent() {
    NriAgentOptions o;
    o.shm_path = seg_.path();
    o.shm_open = shm::testing::TestOptions(shm::Role::kNriAgent);
    o.segment_wait = 0ms;
    const std::string socket = socket_;
    o.connect = [socket] { return nri::ConnectNriSocket(socket); };
    o.policy.fallback_pool = CpuSet::Range(0, 7);
    agent_ = std::make_unique<NriAgent>(*loop_, NriEnv{clock_, random_}, std::move(o), nullptr);
    agent_->Start();
  }

  // Runs the loop without waiting on real time, advancing virtual time by `step` whenever
  // nothing was ready; false after `max_steps`.
  bool RunUntil(const std::function<bool()>& done, Clock::Duration step = 10ms,
                int max_steps = 5000) {
    for (int i = 0; i < max_steps; ++i) {
      if (done()) return true;
      if (!loop_->RunOnce(0ms).ok()) return false;
      if (done()) return true;
      clock_.Advance(step);
    }
    return false;
  }
  bool Ready() {
    return RunUntil([&] {
      return sim_->plugin_state() == sim::RuntimeSimulator::PluginState::kReady && agent_->ready();
    });
  }
  // `step`: as RunUntil's (0: virtual time stands still until the answer).
  Status Create(const std::string& id, const std::string& pod_id, std::vector<std::string> env,
                Clock::Duration step = 10ms) {
    nri::Pod pod = MakePod(pod_id);
    nri::Container c = MakeContainer(id, pod, "main", std::move(env));
    std::optional<Status> result;
    sim_->CreateContainer(pod, c, [&](const Status& s) { result = s; });
    if (!RunUntil([&] { return result.has_value(); }, step)) {
      return DeadlineExceededError("no answer");
    }
    return *result;
  }
  // The cpuset the segment's containers table records for `id`.
  std::string RecordedCpus(const std::string& id) {
    auto e = seg_.dra()->FindContainer(id);
    if (!e.ok() || !e->has_value()) return "<absent>";
    return (**e).cpus.ToListString();
  }
  std::string CpusOf(const std::string& id) {
    auto it = sim_->containers().find(id);
    return it == sim_->containers().end() ? "<absent>" : it->second.container.cpuset.cpus;
  }

  testing::FakeClock clock_;
  testing::FixedRandom random_{0.5};
  SegmentPair seg_{CpuSet::Range(0, 7)};
  std::string socket_;
  std::unique_ptr<loop::EventLoop> loop_;
  std::unique_ptr<sim::RuntimeSimulator> sim_;
  std::unique_ptr<NriAgent> agent_;
};

TEST_F(NriAgentUnitTest, StartCreateContainerStallAndShutdown) {
  seg_.CloseNri();
  StartAgent();
  ASSERT_TRUE(Ready());
  EXPECT_TRUE(agent_->segment_attached());
  EXPECT_TRUE(agent_->healthy());

  ASSERT_TRUE(Create("s1", "p1", {}).ok());
  EXPECT_EQ(CpusOf("s1"), "0-7");
  seg_.Prepare(1, *CpuSet::ParseList("2-3"));
  ASSERT_TRUE(Create("x1", "p2", {ClaimVar(1, "2-3")}).ok());
  EXPECT_EQ(CpusOf("x1"), "2-3");
  // The reply moved the shared container off the claim's CPUs.
  EXPECT_EQ(CpusOf("s1"), "0-1,4-7");

  // Heartbeats run on the loop: while it does not run, virtual time passing makes it unhealthy
  // (3 heartbeat intervals), and it is healthy again once the loop has run its timer.
  clock_.Advance(std::chrono::seconds(4));
  EXPECT_FALSE(agent_->healthy());
  ASSERT_TRUE(RunUntil([&] { return agent_->healthy(); }));

  agent_->Shutdown();
  EXPECT_FALSE(agent_->ready());
}

// The shared containers a reply moves are recorded after_reply_delay after it (the runtime's
// reader runs first), or at the start of the next request, whichever is first.
TEST_F(NriAgentUnitTest, MovedContainersAreRecordedAfterTheDelayOrByTheNextRequest) {
  seg_.CloseNri();
  StartAgent();
  ASSERT_TRUE(Ready());
  ASSERT_TRUE(Create("s1", "p1", {}).ok());
  ASSERT_TRUE(RunUntil([&] { return RecordedCpus("s1") == "0-7"; }));

  seg_.Prepare(1, *CpuSet::ParseList("2-3"));
  ASSERT_TRUE(Create("x1", "p2", {ClaimVar(1, "2-3")}, /*step=*/0ms).ok());
  EXPECT_EQ(CpusOf("s1"), "0-1,4-7");
  EXPECT_EQ(RecordedCpus("x1"), "2-3");  // the binding precedes the reply
  EXPECT_EQ(RecordedCpus("s1"), "0-7");  // the move follows it
  clock_.Advance(1ms);
  ASSERT_TRUE(loop_->RunOnce(0ms).ok());
  EXPECT_EQ(RecordedCpus("s1"), "0-1,4-7");

  seg_.Prepare(2, *CpuSet::ParseList("4-5"));
  ASSERT_TRUE(Create("x2", "p3", {ClaimVar(2, "4-5")}, /*step=*/0ms).ok());
  EXPECT_EQ(CpusOf("s1"), "0-1,6-7");
  EXPECT_EQ(RecordedCpus("s1"), "0-1,4-7");
  ASSERT_TRUE(Create("s2", "p4", {}, /*step=*/0ms).ok());  // no time passed
  EXPECT_EQ(RecordedCpus("s1"), "0-1,6-7");
}

}  // namespace
}  // namespace dracpu::agent
