// The nri-agent against the runtime simulator (tests/sim/runtime), over a real unix socket, with
// a real shared-memory segment in a temp dir that the test writes as the dra-agent would.
// In-process (one event loop runs both) except NriAgentProcess, which runs the
// dracpu-nri-agent binary as a child and SIGKILLs it.
//
// Every wait is bounded (kBound) and is a bound, not an assertion on time.
#include "nri-agent/agent/nri_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "nri-agent/nri/plugin.h"
#include "tests/sim/runtime/runtime_sim.h"
#include "tests/testing/policy_test_util.h"
#include "tests/testing/real_clock.h"

namespace dracpu {
namespace {

using namespace std::chrono_literals;
using policy::testing::ClaimVar;
using policy::testing::MakeContainer;
using policy::testing::MakePod;
using policy::testing::SegmentPair;
using ::testing::HasSubstr;

constexpr auto kBound = 30s;
constexpr auto kCoalesce = 30ms;

CpuSet Cpus(const std::string& list) { return *CpuSet::ParseList(list); }

class NriAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto l = loop::EventLoop::Create(dracpu::testing::RealClock());
    ASSERT_TRUE(l.ok());
    loop_ = std::move(*l);
  }
  void TearDown() override {
    if (agent_) agent_->Shutdown();
    agent_.reset();
    sim_.reset();
  }

  // A runtime simulator on a short socket path inside the segment's temp dir.
  void StartSim(const std::string& dir, sim::RuntimeOptions options = {}) {
    socket_ = dir + "/nri.sock";
    auto s = sim::RuntimeSimulator::Listen(*loop_, socket_, options);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sim_ = std::move(*s);
  }

  agent::NriAgentOptions Options(const std::string& shm_path,
                                 SharedPoolUpdates updates = SharedPoolUpdates::kAuto) {
    agent::NriAgentOptions o;
    o.shm_path = shm_path;
    o.shm_open = shm::testing::TestOptions(shm::Role::kNriAgent);
    o.segment_wait = 0ms;
    o.segment_poll = 20ms;
    o.heartbeat_interval = 100ms;
    o.coalesce_window = kCoalesce;
    const std::string socket = socket_;
    o.connect = [socket] { return nri::ConnectNriSocket(socket); };
    o.backoff.initial = 10ms;
    o.backoff.max = 100ms;
    o.policy.shared_pool_updates = updates;
    o.policy.fallback_pool = CpuSet::Range(0, 7);
    return o;
  }

  void StartAgent(agent::NriAgentOptions o) {
    agent_ = std::make_unique<agent::NriAgent>(
        *loop_, agent::NriEnv{testing::RealClock(), testing::RealRandom()}, std::move(o),
        &metrics_);
    agent_->Start();
  }

  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kBound;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      Status s = loop_->RunOnce(10ms);
      if (!s.ok()) return false;
    }
    return true;
  }
  // The simulator (reporting `nri_version`; empty: none, as containerd <= 2.1) and the agent on
  // `seg`, synchronized.
  bool Up(SegmentPair& seg, const std::string& nri_version,
          SharedPoolUpdates updates = SharedPoolUpdates::kAuto) {
    seg.CloseNri();
    sim::RuntimeOptions rt;
    rt.nri_version = nri_version;
    StartSim(seg.dir(), rt);
    StartAgent(Options(seg.path(), updates));
    return WaitReady();
  }
  // Runs the loop past the agent's coalescing window (what it pushes by itself has gone out).
  void Settle() {
    const auto until = std::chrono::steady_clock::now() + 3 * kCoalesce;
    while (std::chrono::steady_clock::now() < until) ASSERT_TRUE(loop_->RunOnce(5ms).ok());
  }
  bool WaitReady() {
    return RunUntil([&] {
      return sim_->plugin_state() == sim::RuntimeSimulator::PluginState::kReady && agent_->ready();
    });
  }

  Status Do(const std::function<void(sim::RuntimeSimulator::Done)>& op) {
    std::optional<Status> result;
    op([&](const Status& s) { result = s; });
    if (!RunUntil([&] { return result.has_value(); })) return DeadlineExceededError("no answer");
    return *result;
  }
  Status Create(const std::string& id, const std::string& pod_id, const std::string& name,
                std::vector<std::string> env = {}) {
    nri::Pod pod = MakePod(pod_id);
    nri::Container c = MakeContainer(id, pod, name, std::move(env));
    return Do([&](auto done) { sim_->CreateContainer(pod, c, done); });
  }
  std::string CpusOf(const std::string& id) {
    auto it = sim_->containers().find(id);
    return it == sim_->containers().end() ? "<absent>" : it->second.container.cpuset.cpus;
  }

  std::unique_ptr<loop::EventLoop> loop_;
  std::unique_ptr<sim::RuntimeSimulator> sim_;
  std::unique_ptr<agent::NriAgent> agent_;
  MetricsRegistry metrics_;
  std::string socket_;
};

TEST_F(NriAgentTest, SharedExclusiveShrinkAndRefusals) {
  SegmentPair seg(CpuSet::Range(0, 7));
  seg.CloseNri();
  StartSim(seg.dir());
  nri::Pod p0 = MakePod("p0");
  sim_->AddRunning(p0, MakeContainer("s0", p0, "old", {}, "0-7"));
  sim_->AddRunning(p0, MakeContainer("s00", p0, "older", {}, "3"));  // wrong: re-pinned
  StartAgent(Options(seg.path()));
  ASSERT_TRUE(WaitReady());
  EXPECT_EQ(CpusOf("s0"), "0-7");
  EXPECT_EQ(CpusOf("s00"), "0-7");

  ASSERT_TRUE(Create("s1", "p1", "app").ok());
  EXPECT_EQ(CpusOf("s1"), "0-7");
  seg.Prepare(1, Cpus("2-3"));
  ASSERT_TRUE(Create("x1", "p2", "main", {ClaimVar(1, "2-3")}).ok());
  EXPECT_EQ(CpusOf("x1"), "2-3");
  for (const char* id : {"s0", "s00", "s1"}) EXPECT_EQ(CpusOf(id), "0-1,4-7") << id;

  // Sharing, forged and malformed env, unknown claims: refused with clear messages.
  Status shared = Create("x2", "p3", "main", {ClaimVar(1, "2-3")});
  EXPECT_THAT(shared.message(), HasSubstr("already used by container"));
  Status forged = Create("x3", "p3", "main", {ClaimVar(1, "2-4")});
  EXPECT_THAT(forged.message(), HasSubstr("does not match"));
  Status unknown = Create("x4", "p3", "main", {ClaimVar(5, "6")});
  EXPECT_THAT(unknown.message(), HasSubstr("not prepared"));
  Status malformed = Create("x5", "p3", "main", {ClaimVar(1, "2-")});
  EXPECT_FALSE(malformed.ok());
  for (const char* id : {"x2", "x3", "x4", "x5"}) EXPECT_EQ(CpusOf(id), "<absent>") << id;
  EXPECT_EQ(sim_->plugin_state(), sim::RuntimeSimulator::PluginState::kReady);

  // The same container restarting is allowed.
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("x1", done); }).ok());
  ASSERT_TRUE(Create("x1b", "p2", "main", {ClaimVar(1, "2-3")}).ok());
  EXPECT_EQ(CpusOf("x1b"), "2-3");

  // Something else changes an exclusive container's cpuset: ours is re-asserted.
  ASSERT_TRUE(Do([&](auto done) { sim_->UpdateContainer("x1b", {"0-7", ""}, done); }).ok());
  EXPECT_EQ(CpusOf("x1b"), "2-3");

  // The shared-memory tables say the same.
  auto x = seg.dra()->FindContainer("x1b");
  ASSERT_TRUE(x.ok() && x->has_value());
  EXPECT_EQ((*x)->cpus, Cpus("2-3"));
  ASSERT_TRUE(Do([&](auto done) { sim_->RemoveContainer("x1", done); }).ok());
  auto gone = seg.dra()->FindContainer("x1");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
}

TEST_F(NriAgentTest, EmptyPoolRefused) {
  SegmentPair seg(CpuSet::Range(0, 3));
  ASSERT_TRUE(Up(seg, ""));
  ASSERT_TRUE(Create("s1", "p1", "app").ok());
  seg.Prepare(1, Cpus("0-3"));
  Status excl = Create("x1", "p2", "main", {ClaimVar(1, "0-3")});
  EXPECT_THAT(excl.message(), HasSubstr("leave the shared CPU pool empty"));
  EXPECT_EQ(CpusOf("s1"), "0-3");
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("s1", done); }).ok());
  ASSERT_TRUE(Create("x1", "p2", "main", {ClaimVar(1, "0-3")}).ok());
  Status shared = Create("s2", "p3", "app");
  EXPECT_THAT(shared.message(), HasSubstr("shared CPU pool is empty"));
  EXPECT_EQ(CpusOf("s2"), "<absent>");
}

TEST_F(NriAgentTest, WidenOnReleaseWhenTheRuntimeIsSafe) {
  SegmentPair seg(CpuSet::Range(0, 7));
  ASSERT_TRUE(Up(seg, "v0.12.1"));
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  ASSERT_TRUE(Create("s2", "p2", "a").ok());
  seg.Prepare(1, Cpus("4-7"));
  ASSERT_TRUE(Create("x1", "p3", "main", {ClaimVar(1, "4-7")}).ok());
  EXPECT_EQ(CpusOf("s1"), "0-3");
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("x1", done); }).ok());
  ASSERT_TRUE(Do([&](auto done) { sim_->RemoveContainer("x1", done); }).ok());
  seg.Release(1);  // the dra-agent's Unprepare
  EXPECT_TRUE(RunUntil([&] { return CpusOf("s1") == "0-7" && CpusOf("s2") == "0-7"; }))
      << CpusOf("s1") << " " << CpusOf("s2");
  EXPECT_GE(agent_->update_batches(), 1);
  auto snap = seg.dra()->ReadSnapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(RunUntil([&] {
    auto e = seg.dra()->FindContainer("s2");
    return e.ok() && e->has_value() && (*e)->cpus == CpuSet::Range(0, 7);
  }));
  EXPECT_EQ(snap->shared_pool.cpus, CpuSet::Range(0, 7));
}

TEST_F(NriAgentTest, WidensInRepliesWhenUnsolicitedUpdatesAreOff) {
  SegmentPair seg(CpuSet::Range(0, 7));
  ASSERT_TRUE(Up(seg, "v0.13.0", SharedPoolUpdates::kNever));
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  seg.Prepare(1, Cpus("4-7"));
  ASSERT_TRUE(Create("x1", "p3", "main", {ClaimVar(1, "4-7")}).ok());
  ASSERT_TRUE(Do([&](auto done) { sim_->RemoveContainer("x1", done); }).ok());
  seg.Release(1);
  Settle();
  EXPECT_EQ(CpusOf("s1"), "0-3");  // nothing unsolicited
  // The next container event's reply widens it; the new container gets the wider pool.
  ASSERT_TRUE(Create("s2", "p2", "a").ok());
  EXPECT_EQ(CpusOf("s2"), "0-7");
  EXPECT_EQ(CpusOf("s1"), "0-7");
  EXPECT_EQ(agent_->update_batches(), 0);
  EXPECT_EQ(sim_->unsolicited_calls(), 0);
  EXPECT_EQ(sim_->reply_updates(), 2);  // s1's shrink, then its widening
}

// containerd 1.7/2.1 as they are (no NRI version in Configure) with the default config: every
// event that has a reply carries the widening, once per container and release.
TEST_F(NriAgentTest, DefaultRuntimeWidensByTheNextEvent) {
  SegmentPair seg(CpuSet::Range(0, 7));
  ASSERT_TRUE(Up(seg, ""));
  for (const char* id : {"s1", "s2", "s3"})
    ASSERT_TRUE(Create(id, std::string("p") + id, "a").ok());
  seg.Prepare(1, Cpus("6-7"));
  seg.Prepare(2, Cpus("4-5"));
  // A prepared claim without a container takes nothing from running containers yet...
  ASSERT_TRUE(Do([&](auto done) { sim_->UpdateContainer("s3", {"0-7", ""}, done); }).ok());
  EXPECT_EQ(CpusOf("s1"), "0-7");
  EXPECT_EQ(sim_->reply_updates(), 0);
  // ...but new shared containers do not get it, and its container's creation shrinks them all.
  ASSERT_TRUE(Create("s4", "p4", "a").ok());
  EXPECT_EQ(CpusOf("s4"), "0-3");
  ASSERT_TRUE(Create("x1", "px1", "main", {ClaimVar(1, "6-7")}).ok());
  for (const char* id : {"s1", "s2", "s3", "s4"}) EXPECT_EQ(CpusOf(id), "0-3") << id;
  EXPECT_EQ(sim_->reply_updates(), 3);
  ASSERT_TRUE(Create("x2", "px2", "main", {ClaimVar(2, "4-5")}).ok());
  EXPECT_EQ(sim_->reply_updates(), 3);  // already off claim 2's CPUs

  // The claim's container stops: its CPUs stay out of the pool until the Unprepare.
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("x1", done); }).ok());
  EXPECT_EQ(CpusOf("s1"), "0-3");
  seg.Release(1);
  Settle();
  EXPECT_EQ(CpusOf("s1"), "0-3");
  // Any container's stop widens the running shared ones.
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("s4", done); }).ok());
  for (const char* id : {"s1", "s2", "s3"}) EXPECT_EQ(CpusOf(id), "0-3,6-7") << id;
  EXPECT_EQ(CpusOf("s4"), "0-3");  // stopped: left alone
  EXPECT_EQ(sim_->reply_updates(), 6);
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("x2", done); }).ok());
  seg.Release(2);
  Settle();
  // An update of one container carries the others' widening and re-asserts its own.
  ASSERT_TRUE(Do([&](auto done) { sim_->UpdateContainer("s3", {"0-1", ""}, done); }).ok());
  for (const char* id : {"s1", "s2", "s3"}) EXPECT_EQ(CpusOf(id), "0-7") << id;
  EXPECT_EQ(sim_->reply_updates(), 8);
  EXPECT_EQ(sim_->unsolicited_calls(), 0);
  EXPECT_EQ(sim_->deadlock(), "");
  // The containers table records what was applied (after_reply_delay after the reply).
  Settle();
  auto e = seg.dra()->FindContainer("s1");
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->cpus, CpuSet::Range(0, 7));
}

// A Prepare and its Unprepare with no container in between: nothing is sent at all.
TEST_F(NriAgentTest, PrepareAndUnprepareWithoutContainerSendNothing) {
  SegmentPair seg(CpuSet::Range(0, 7));
  ASSERT_TRUE(Up(seg, "v0.12.1"));
  for (const char* id : {"s1", "s2"}) ASSERT_TRUE(Create(id, std::string("p") + id, "a").ok());
  for (int i = 0; i < 4; ++i) seg.Prepare(i + 1, CpuSet{4 + i});
  Settle();
  ASSERT_TRUE(Create("s3", "p3", "a").ok());
  EXPECT_EQ(CpusOf("s3"), "0-3");
  for (int i = 0; i < 4; ++i) seg.Release(i + 1);
  Settle();
  EXPECT_EQ(CpusOf("s1"), "0-7");
  EXPECT_EQ(CpusOf("s3"), "0-7");  // created while they were held: widened
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("s2", done); }).ok());
  EXPECT_EQ(sim_->reply_updates() + sim_->unsolicited_updates(), 1) << "only s3's widening";
}

// A burst of releases on a runtime that allows unsolicited updates: one batch, one update per
// shared container.
TEST_F(NriAgentTest, UnsolicitedBurstIsCoalesced) {
  SegmentPair seg(CpuSet::Range(0, 15));
  ASSERT_TRUE(Up(seg, "v0.12.1"));
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Create("s" + std::to_string(i), "ps", "a").ok());
  for (int i = 0; i < 8; ++i) seg.Prepare(i + 1, CpuSet{8 + i});
  for (int i = 0; i < 8; ++i) {
    const std::string id = "x" + std::to_string(i);
    ASSERT_TRUE(Create(id, "p" + id, "main", {ClaimVar(i + 1, std::to_string(8 + i))}).ok());
  }
  EXPECT_EQ(sim_->reply_updates(), 6);  // one shrink each, in the first creation's reply
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("x" + std::to_string(i), done); }).ok());
  }
  for (int i = 0; i < 8; ++i) {
    seg.Prepare(i + 1, CpuSet{8 + i}, shm::ClaimState::kReleasing);
    seg.Release(i + 1);
  }
  EXPECT_TRUE(RunUntil([&] { return CpusOf("s5") == "0-15"; })) << CpusOf("s5");
  Settle();
  EXPECT_EQ(sim_->unsolicited_calls(), 1);
  EXPECT_EQ(sim_->unsolicited_updates(), 6);
  EXPECT_EQ(sim_->reply_updates(), 6);
}

// Kubelet-style CRI updates of shared containers from two callers, back to back, while claims
// come and go: containerd 1.7/2.1 (no NRI version) deadlock when an unsolicited UpdateContainers
// meets them (real-runtimes.md), so `always` hangs the runtime and the default never does.
class ConcurrentUpdatesTest : public NriAgentTest,
                              public ::testing::WithParamInterface<SharedPoolUpdates> {};

TEST_P(ConcurrentUpdatesTest, AlwaysHangsAnOldRuntimeTheDefaultDoesNot) {
  const bool always = GetParam() == SharedPoolUpdates::kAlways;
  SegmentPair seg(CpuSet::Range(0, 7));
  seg.CloseNri();
  StartSim(seg.dir());  // containerd 2.1: no NRI version in Configure
  StartAgent(Options(seg.path(), GetParam()));
  ASSERT_TRUE(WaitReady());
  for (const char* id : {"s1", "s2"}) ASSERT_TRUE(Create(id, std::string("p") + id, "a").ok());

  // Two callers updating shared containers, back to back: whenever one update runs, the other
  // waits for the runtime's NRI lock. Each burst is `n` updates per caller.
  int completed = 0;
  auto burst = [&](int n) {
    auto left = std::make_shared<int>(2 * n);
    std::function<void(std::string, int)> chain = [&, left](std::string id, int k) {
      sim_->UpdateContainer(id, {"", ""}, [&, left, id, k](const Status& st) {
        EXPECT_TRUE(st.ok()) << st.ToString();
        ++completed;
        --*left;
        if (k > 1) chain(id, k - 1);
      });
    };
    chain("s1", n);
    chain("s2", n);
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (*left > 0 && std::chrono::steady_clock::now() < until) {
      ASSERT_TRUE(loop_->RunOnce(1ms).ok());
    }
  };
  auto op = [&](const std::function<void(sim::RuntimeSimulator::Done)>& f,
                std::chrono::milliseconds bound = kBound) {
    auto done = std::make_shared<bool>(false);
    f([done](const Status& st) {
      EXPECT_TRUE(st.ok()) << st.ToString();
      *done = true;
    });
    const auto until = std::chrono::steady_clock::now() + bound;
    while (!*done && std::chrono::steady_clock::now() < until) {
      if (!loop_->RunOnce(1ms).ok()) break;
    }
    return *done;
  };
  for (int cycle = 0; cycle < 10 && sim_->deadlock().empty(); ++cycle) {
    const std::string x = "x" + std::to_string(cycle);
    seg.Prepare(1, Cpus("6-7"));
    const nri::Pod pod = MakePod("p" + x);
    const nri::Container c = MakeContainer(x, pod, "main", {ClaimVar(1, "6-7")});
    ASSERT_TRUE(op([&](auto done) { sim_->CreateContainer(pod, c, done); }));
    ASSERT_TRUE(op([&](auto done) { sim_->StopContainer(x, done); }));
    ASSERT_TRUE(op([&](auto done) { sim_->RemoveContainer(x, done); }));
    // The Unprepare; then the kubelet resizes while the agent's pushed batch (if any) is on its
    // way: the first burst starts as soon as the batch is sent, before the runtime reads it.
    const int batches = agent_->update_batches();
    seg.Release(1);
    const auto quiet = std::chrono::steady_clock::now() + 4 * kCoalesce;
    while (agent_->update_batches() == batches && std::chrono::steady_clock::now() < quiet) {
      ASSERT_TRUE(loop_->RunOnce(1ms).ok());
    }
    burst(5);
  }
  if (always) {
    // The watchdog's view: the runtime is stuck for good, as containerd's goroutine dump shows.
    EXPECT_THAT(sim_->deadlock(), HasSubstr("waits for the adaptation lock")) << completed;
    const int before = completed;
    EXPECT_FALSE(op([&](auto done) { sim_->StopContainer("s1", done); }, 1000ms));
    EXPECT_EQ(completed, before);
  } else {
    EXPECT_EQ(sim_->deadlock(), "");
    EXPECT_EQ(sim_->unsolicited_calls(), 0);
    EXPECT_GT(completed, 20);
    // The replies to those updates widened the shared containers after every release.
    EXPECT_EQ(CpusOf("s1"), "0-7");
    EXPECT_EQ(CpusOf("s2"), "0-7");
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ConcurrentUpdatesTest,
                         ::testing::Values(SharedPoolUpdates::kAlways, SharedPoolUpdates::kAuto),
                         [](const auto& info) {
                           return std::string(SharedPoolUpdatesName(info.param));
                         });

TEST_F(NriAgentTest, RuntimeRestartReconnectsAndResyncs) {
  SegmentPair seg(CpuSet::Range(0, 7));
  ASSERT_TRUE(Up(seg, ""));
  seg.Prepare(1, Cpus("6-7"));
  ASSERT_TRUE(Create("x1", "p1", "main", {ClaimVar(1, "6-7")}).ok());
  ASSERT_TRUE(Create("s1", "p2", "a").ok());
  seg.Prepare(2, Cpus("4-5"));  // prepared while the runtime restarts, no container yet

  sim_->DropPlugin(UnavailableError("runtime restart"));
  nri::Pod p3 = MakePod("p3");
  // A container the runtime started while we were away, on every CPU.
  sim_->AddRunning(p3, MakeContainer("s3", p3, "late", {}, "0-7"));
  ASSERT_TRUE(RunUntil([&] { return !agent_->ready(); }));
  ASSERT_TRUE(WaitReady());
  EXPECT_EQ(CpusOf("x1"), "6-7");
  // Re-pinned by Synchronize to the pool, which excludes every prepared claim (1 and 2).
  EXPECT_EQ(CpusOf("s1"), "0-3");
  EXPECT_EQ(CpusOf("s3"), "0-3");
  // Claim 2 survived the resync and is still usable; claim 1 is still x1's.
  ASSERT_TRUE(Create("x2", "p4", "main", {ClaimVar(2, "4-5")}).ok());
  EXPECT_EQ(CpusOf("s1"), "0-3");
  EXPECT_THAT(Create("x3", "p5", "main", {ClaimVar(1, "6-7")}).message(),
              HasSubstr("already used"));
}

TEST_F(NriAgentTest, SegmentAttachedLate) {
  shm::testing::TempDir dir;
  StartSim(dir.path());
  nri::Pod p0 = MakePod("p0");
  sim_->AddRunning(p0, MakeContainer("x0", p0, "main", {ClaimVar(1, "6-7")}, "6-7"));
  StartAgent(Options(dir.File("state.shm")));
  ASSERT_TRUE(
      RunUntil([&] { return sim_->plugin_state() == sim::RuntimeSimulator::PluginState::kReady; }));
  EXPECT_FALSE(agent_->ready());
  // Conservative: shared containers avoid the CPUs running containers' env names.
  ASSERT_TRUE(Create("s1", "p1", "a").ok());
  EXPECT_EQ(CpusOf("s1"), "0-5");
  EXPECT_THAT(Create("x1", "p2", "main", {ClaimVar(2, "4")}).message(),
              HasSubstr("not attached yet"));
  // A refusal, not a broken plugin: the runtime keeps us and did not create the container.
  EXPECT_EQ(sim_->plugin_state(), sim::RuntimeSimulator::PluginState::kReady);
  EXPECT_EQ(CpusOf("x1"), "<absent>");

  // The dra-agent comes up: creates the segment, prepares the claims.
  shm::OpenOptions o = shm::testing::TestOptions(shm::Role::kDraAgent);
  auto dra = shm::Segment::Open(dir.File("state.shm"), o);
  ASSERT_TRUE(dra.ok());
  {
    shm::TopologySummary topo{};
    topo.online = topo.allocatable = CpuSet::Range(0, 7);
    shm::ConfigSummary config{};
    config.flags = shm::kConfigStrictCpuReservation;
    auto tx = (*dra)->Begin();
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(tx->SetTopology(topo).ok());
    ASSERT_TRUE(tx->SetConfig(config).ok());
    ASSERT_TRUE(tx->UpsertClaim(shm::testing::TestClaim(1, Cpus("6-7"))).ok());
    ASSERT_TRUE(tx->UpsertClaim(shm::testing::TestClaim(2, Cpus("4"))).ok());
    tx->Commit();
  }
  ASSERT_TRUE(WaitReady());  // attached, reconnected, resynchronized
  EXPECT_EQ(CpusOf("s1"), "0-3,5");
  EXPECT_EQ(CpusOf("x0"), "6-7");
  ASSERT_TRUE(Create("x1", "p2", "main", {ClaimVar(2, "4")}).ok());
  EXPECT_EQ(CpusOf("x1"), "4");
}

// --- the real binary, SIGKILLed and restarted

class AgentProcess {
 public:
  AgentProcess(const std::string& socket, const std::string& shm, const std::string& config) {
    const char* build = std::getenv("DRACPU_BUILD_DIR");
    const std::string bin = std::string(build ? build : "build") + "/nri-agent/dracpu-nri-agent";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::unsetenv("NRI_PLUGIN_SOCKET");
      std::vector<std::string> args = {bin,
                                       "--nri-socket=" + socket,
                                       "--shm-path=" + shm,
                                       "--bind-address=127.0.0.1:0",
                                       "--config=" + config,
                                       "--segment-wait-ms=0"};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~AgentProcess() { Kill(); }
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // SIGTERM; the exit status.
  int Terminate() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST_F(NriAgentTest, AgentKilledAndRestartedWith200Containers) {
  SegmentPair seg(CpuSet::Range(0, 31), 512, /*real_boot_id=*/true);
  seg.CloseNri();
  StartSim(seg.dir());
  const std::string config = seg.dir() + "/config.yaml";
  {
    FILE* f = std::fopen(config.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("sharedPoolUpdates: never\n", f);
    std::fclose(f);
  }
  auto sim_ready = [&] {
    return RunUntil(
        [&] { return sim_->plugin_state() == sim::RuntimeSimulator::PluginState::kReady; });
  };
  auto agent = std::make_unique<AgentProcess>(socket_, seg.path(), config);
  ASSERT_TRUE(sim_ready()) << sim_->last_drop().ToString();

  for (int i = 0; i < 10; ++i) seg.Prepare(i + 1, Cpus(std::to_string(20 + i)));
  for (int i = 0; i < 200; ++i) {
    const std::string id = "c" + std::to_string(i);
    std::vector<std::string> env;
    if (i % 20 == 0) env.push_back(ClaimVar(i / 20 + 1, std::to_string(20 + i / 20)));
    ASSERT_TRUE(Create(id, "p" + std::to_string(i), "app", env).ok()) << id;
  }
  ASSERT_TRUE(Do([&](auto done) { sim_->StopContainer("c7", done); }).ok());
  std::map<std::string, std::string> before;
  for (const auto& [id, c] : sim_->containers()) before[id] = c.container.cpuset.cpus;
  EXPECT_EQ(before.at("c0"), "20");
  EXPECT_EQ(before.at("c1"), "0-19,30-31");
  auto table_before = seg.dra()->ReadSnapshot();
  ASSERT_TRUE(table_before.ok());
  ASSERT_EQ(table_before->containers.size(), 200u);

  agent->Kill();
  ASSERT_TRUE(
      RunUntil([&] { return sim_->plugin_state() == sim::RuntimeSimulator::PluginState::kNone; }));
  agent = std::make_unique<AgentProcess>(socket_, seg.path(), config);
  ASSERT_TRUE(sim_ready()) << sim_->last_drop().ToString();

  std::map<std::string, std::string> after;
  for (const auto& [id, c] : sim_->containers()) after[id] = c.container.cpuset.cpus;
  EXPECT_EQ(before, after);
  auto table_after = seg.dra()->ReadSnapshot();
  ASSERT_TRUE(table_after.ok());
  ASSERT_EQ(table_after->containers.size(), 200u);
  for (const auto& e : table_before->containers) {
    const shm::ContainerEntry* a = table_after->FindContainer(e.Id());
    ASSERT_NE(a, nullptr) << e.Id();
    EXPECT_EQ(a->Kind(), e.Kind()) << e.Id();
    EXPECT_EQ(a->cpus, e.cpus) << e.Id();
    EXPECT_EQ(a->claim_count, e.claim_count) << e.Id();
  }
  EXPECT_EQ(table_after->claims.size(), 10u);
  // Still enforcing after the restart.
  EXPECT_THAT(Create("dup", "px", "main", {ClaimVar(1, "20")}).message(),
              HasSubstr("already used"));
  const int status = agent->Terminate();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace dracpu
