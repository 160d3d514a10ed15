// Shared-pool update traffic (issue 15 point 2): the whole nri-agent (NriAgent: policy, watcher
// thread, coalescing window) against the runtime simulator in one process, over a socketpair,
// with a real shared-memory segment the benchmark writes as the dra-agent does.
//
// One iteration is one burst of claims with 500 running shared containers on a 96-CPU node:
// 32 claims prepared in one call (two commits per claim, as CpuClaimPreparer), each claim's
// container created, stopped and removed, the 32 claims unprepared in one call (two commits per
// claim, `gap_us` apart: 0 on tmpfs, a few ms when each claim pays a CDI fsync on disk), and then
// what widens the shared containers again: on a runtime without an NRI version (containerd 1.7 /
// 2.1) the next container event's reply (a shared container's creation), on one with NRI v0.12.1
// the agent's own coalesced UpdateContainers. Counters per iteration: `updates` (container
// updates the runtime applied, replies and unsolicited; target <= 1000 = one shrink and one widen
// per shared container), `calls` (UpdateContainers batches). The time per iteration is printed
// beside the same cycle with no shared container running (`x_no_shared`) and a 256-byte ttrpc echo
// on the same loop (`x_echo`). PrepareUnprepare: the 32 claims prepared and released with no
// container in between, then one event: `updates` must be 0.
#include <benchmark/benchmark.h>
#include <glog/logging.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/event_loop.h"
#include "nri-agent/agent/nri_agent.h"
#include "shm-schema/segment.h"
#include "tests/bench/ttrpc_echo_baseline.h"
#include "tests/sim/runtime/runtime_sim.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/shm_test_util.h"

namespace dracpu {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kCpus = 96;
constexpr int kClaims = 32;
constexpr int kClaimCpus = 2;  // CPUs 32..95 go to claims; the pool keeps 0-31

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "pool_updates_bench: %s: %s\n", what, s.ToString().c_str());
    std::abort();
  }
}

CpuSet ClaimCpus(int i) { return CpuSet::Range(32 + kClaimCpus * i, 32 + kClaimCpus * i + 1); }

std::string ClaimEnv(int i) {
  return "DRA_CPUSET_" + shm::testing::Uid(i) + "=" + ClaimCpus(i).ToListString();
}

// A node: the segment, the runtime simulator and the nri-agent on one loop.
class Node {
 public:
  Node(int shared, const std::string& nri_version) {
    loop_ = std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value();
    shm::OpenOptions o = shm::testing::TestOptions(shm::Role::kDraAgent, 64, 2048);
    auto d = shm::Segment::Open(dir_.File("state.shm"), o);
    Check(d.status(), "segment");
    dra_ = std::move(*d);
    shm::TopologySummary topo{};
    topo.online = topo.allocatable = CpuSet::Range(0, kCpus - 1);
    shm::ConfigSummary config{};
    config.flags = shm::kConfigStrictCpuReservation;
    config.min_shared_cpus = 1;
    Commit([&](shm::WriteTransaction& tx) {
      Check(tx.SetTopology(topo), "topology");
      Check(tx.SetConfig(config), "config");
    });
    sim::RuntimeOptions rt;
    rt.nri_version = nri_version;
    sim_ = sim::RuntimeSimulator::Create(*loop_, rt);
    agent::NriAgentOptions a;
    a.shm_path = dir_.File("state.shm");
    a.shm_open = shm::testing::TestOptions(shm::Role::kNriAgent);
    a.segment_wait = 0ms;
    a.connect = [this]() -> Result<UniqueFd> {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return ErrnoStatus("socketpair", errno);
      }
      RETURN_IF_ERROR(sim_->Adopt(UniqueFd(sv[1])));
      return UniqueFd(sv[0]);
    };
    agent_ = std::make_unique<agent::NriAgent>(
        *loop_, agent::NriEnv{testing::RealClock(), testing::RealRandom()}, std::move(a), nullptr);
    agent_->Start();
    RunUntil([&] {
      return sim_->plugin_state() == sim::RuntimeSimulator::PluginState::kReady && agent_->ready();
    });
    for (int i = 0; i < shared; ++i) Create("s" + std::to_string(i), {});
  }
  ~Node() {
    agent_->Shutdown();
    agent_.reset();
    sim_.reset();
  }

  void RunUntil(const std::function<bool()>& done) {
    const auto deadline = Clock::now() + 60s;
    while (!done()) {
      if (Clock::now() > deadline) Check(DeadlineExceededError("no progress"), "waiting");
      Check(loop_->RunOnce(1ms), "loop");
    }
  }
  void Op(const std::function<void(sim::RuntimeSimulator::Done)>& op) {
    bool done = false;
    op([&](const Status& s) {
      Check(s, "runtime operation");
      done = true;
    });
    RunUntil([&] { return done; });
  }
  void Create(const std::string& id, std::vector<std::string> env) {
    nri::Pod pod{"pod-" + id, "pod-" + id, "uid-" + id, "default", {}, {}};
    nri::Container c;
    c.id = id;
    c.pod_sandbox_id = pod.id;
    c.name = "app";
    c.env = std::move(env);
    Op([&](auto done) { sim_->CreateContainer(pod, c, done); });
  }
  // The dra-agent's commits for one claim: reserved then prepared, or releasing then removed.
  void Prepare(int i) {
    shm::ClaimSpec c = shm::testing::TestClaim(i, ClaimCpus(i));
    c.state = shm::ClaimState::kReserved;
    Commit([&](shm::WriteTransaction& tx) { Check(tx.UpsertClaim(c), "reserve"); });
    c.state = shm::ClaimState::kPrepared;
    Commit([&](shm::WriteTransaction& tx) { Check(tx.UpsertClaim(c), "prepare"); });
  }
  void Unprepare(int i) {
    shm::ClaimSpec c = shm::testing::TestClaim(i, ClaimCpus(i));
    c.state = shm::ClaimState::kReleasing;
    Commit([&](shm::WriteTransaction& tx) { Check(tx.UpsertClaim(c), "releasing"); });
    Commit([&](shm::WriteTransaction& tx) {
      Check(tx.RemoveClaim(shm::testing::Uid(i)).status(), "remove");
    });
  }
  // Lets the agent see the segment's changes (its watcher thread) for `d`.
  void Pump(std::chrono::microseconds d) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) Check(loop_->RunOnce(1ms), "loop");
  }
  int updates() const { return sim_->reply_updates() + sim_->unsolicited_updates(); }
  int calls() const { return sim_->unsolicited_calls(); }
  bool AllShared(const std::string& cpus, int shared) const {
    for (int i = 0; i < shared; ++i) {
      auto it = sim_->containers().find("s" + std::to_string(i));
      if (it == sim_->containers().end() || it->second.container.cpuset.cpus != cpus) return false;
    }
    return true;
  }
  sim::RuntimeSimulator& sim() { return *sim_; }
  loop::EventLoop& loop() { return *loop_; }

 private:
  void Commit(const std::function<void(shm::WriteTransaction&)>& f) {
    auto tx = dra_->Begin();
    Check(tx.status(), "begin");
    f(*tx);
    tx->Commit();
  }

  shm::testing::TempDir dir_;
  std::unique_ptr<loop::EventLoop> loop_;
  std::unique_ptr<shm::Segment> dra_;
  std::unique_ptr<sim::RuntimeSimulator> sim_;
  std::unique_ptr<agent::NriAgent> agent_;
};

// The runtime's NRI version per benchmark argument: 0 = none (containerd 1.7/2.1), 1 = v0.12.1.
std::string NriVersion(int64_t arg) { return arg == 0 ? "" : "v0.12.1"; }

// One burst: prepare, each claim's container created and stopped, unprepare, removal.
void Cycle(Node& node, int gap_us, int round) {
  auto id = [round](int i) { return "x" + std::to_string(round) + "-" + std::to_string(i); };
  for (int i = 0; i < kClaims; ++i) node.Prepare(i);
  node.Pump(1ms);
  for (int i = 0; i < kClaims; ++i) node.Create(id(i), {ClaimEnv(i)});
  for (int i = 0; i < kClaims; ++i) {
    node.Op([&](auto done) { node.sim().StopContainer(id(i), done); });
  }
  for (int i = 0; i < kClaims; ++i) {
    node.Unprepare(i);
    if (gap_us > 0) node.Pump(std::chrono::microseconds(gap_us));
  }
  for (int i = 0; i < kClaims; ++i) {
    node.Op([&](auto done) { node.sim().RemoveContainer(id(i), done); });
  }
}

// Waits for the widening: by the next event's reply (no NRI version), or unsolicited.
void Widen(Node& node, int shared, bool by_event, int round) {
  if (by_event) {
    const std::string id = "e" + std::to_string(round);
    node.Create(id, {});
    node.Op([&](auto done) { node.sim().StopContainer(id, done); });
    node.Op([&](auto done) { node.sim().RemoveContainer(id, done); });
  }
  node.RunUntil([&] { return node.AllShared("0-" + std::to_string(kCpus - 1), shared); });
}

// Args: NRI version (0 none, 1 v0.12.1), gap between released claims in µs.
void BM_ClaimBurst(benchmark::State& state) {
  constexpr int kShared = 500;
  const bool by_event = state.range(0) == 0;
  const int gap_us = static_cast<int>(state.range(1));
  Node baseline(0, NriVersion(state.range(0)));
  Node node(kShared, NriVersion(state.range(0)));
  const double echo = bench::TtrpcEchoNs(node.loop(), 2000);
  double total = 0, base_total = 0;
  int round = 0;
  int64_t updates = 0, calls = 0;
  for (auto _ : state) {
    const int u0 = node.updates(), c0 = node.calls();
    const auto start = Clock::now();
    Cycle(node, gap_us, round);
    Widen(node, kShared, by_event, round);
    total += std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    updates += node.updates() - u0;
    calls += node.calls() - c0;
    state.PauseTiming();
    const auto b0 = Clock::now();
    Cycle(baseline, gap_us, round);
    Widen(baseline, 0, by_event, round);
    base_total += std::chrono::duration<double, std::nano>(Clock::now() - b0).count();
    state.ResumeTiming();
    ++round;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["updates"] = static_cast<double>(updates) / n;
  state.counters["calls"] = static_cast<double>(calls) / n;
  state.counters["ms"] = total / n / 1e6;
  state.counters["x_no_shared"] = total / base_total;
  state.counters["x_echo"] = total / n / echo;
  state.SetLabel(std::string(by_event ? "NRI none: widened by the next event's reply"
                                      : "NRI v0.12.1: widened unsolicited") +
                 ", release gap " + std::to_string(gap_us) + " us");
}
BENCHMARK(BM_ClaimBurst)
    ->Args({0, 0})
    ->Args({0, 5000})
    ->Args({1, 0})
    ->Args({1, 5000})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// 32 claims prepared and unprepared with no container in between, then one container event.
void BM_PrepareUnprepare(benchmark::State& state) {
  constexpr int kShared = 500;
  Node node(kShared, NriVersion(state.range(0)));
  int64_t updates = 0;
  int round = 0;
  for (auto _ : state) {
    const int u0 = node.updates();
    for (int i = 0; i < kClaims; ++i) node.Prepare(i);
    node.Pump(100ms);  // past the coalescing window
    for (int i = 0; i < kClaims; ++i) node.Unprepare(i);
    node.Pump(100ms);
    Widen(node, kShared, /*by_event=*/true, round++);
    updates += node.updates() - u0;
  }
  state.counters["updates"] =
      static_cast<double>(updates) / static_cast<double>(state.iterations());
  state.SetLabel(state.range(0) == 0 ? "NRI none" : "NRI v0.12.1");
}
BENCHMARK(BM_PrepareUnprepare)->Arg(0)->Arg(1)->Iterations(2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dracpu

int main(int argc, char** argv) {
  FLAGS_minloglevel = 2;  // the agent logs every request at INFO
  google::InitGoogleLogging(argv[0]);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
