// The pinning policy behind the NRI adapter, over the mux on a socketpair, with a real
// shared-memory segment (in /dev/shm or /tmp): the runtime's side calls the plugin as containerd
// would. Each benchmark prints its latency with the ratio to a small ttrpc echo measured on the
// same loop in the same run (x_echo), as tests/bench/ttrpc_bench.cc does for the bare adapter.
//
// Targets (issue 7 item 8): CreateContainer with 500 running containers p99 < 200 µs;
// Synchronize of 1000 containers < 50 ms. Reported, not asserted.
//
// Issue 15 item 3: the exclusive CreateContainer that starts a newly prepared claim's container
// with 500 running shared containers, whose reply carries the shrink of every one of them
// (BM_PolicyCreateExclusiveShrink). Its baseline, measured in the same run: a bare ttrpc echo
// whose answer is as large as that reply, plus the protobuf encoding of those updates; target
// p99 <= 2x that (printed as p99_x_baseline; p99_x_baseline_p99 divides by the baseline's own
// p99 in the same run). The clock stops when the reply arrives, before the runtime decodes it.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/claim_env.h"
#include "common/event_loop.h"
#include "nri-agent/mux/ttrpc_peer.h"
#include "nri-agent/nri/convert.h"
#include "nri-agent/nri/plugin.h"
#include "nri-agent/policy/pinning_policy.h"
#include "shm-schema/segment.h"
#include "tests/bench/kubelet_like_container.h"
#include "tests/bench/ttrpc_echo_baseline.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/temp_dir.h"

namespace dracpu {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// This thread's CPU time in ns. Both sides of the call run on this thread (one loop), so it is
// the call's CPU cost without the waits a loaded machine adds to wall time.
double ThreadCpuNs() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

double NowNs() {
  return std::chrono::duration<double, std::nano>(Clock::now().time_since_epoch()).count();
}

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "nri_policy_bench: %s\n", s.ToString().c_str());
    std::abort();
  }
}

class TempDir : public dracpu::testing::TempDir {
 public:
  TempDir() : dracpu::testing::TempDir("dracpu-nri-bench", Base::kTmpfs) {}
};

// A 64-CPU node with 10 prepared claims, opened as both agents.
struct Node {
  TempDir dir;
  std::unique_ptr<shm::Segment> dra;
  std::unique_ptr<shm::Segment> nri;

  Node() {
    shm::OpenOptions o;
    o.role = shm::Role::kDraAgent;
    o.create_if_missing = true;
    o.node_name = "bench";
    o.version = "bench";
    o.containers_capacity = 4096;
    auto d = shm::Segment::Open(dir.path() + "/state.shm", o);
    Check(d.status());
    dra = std::move(*d);
    auto tx = dra->Begin();
    Check(tx.status());
    shm::TopologySummary topo{};
    topo.online = topo.allocatable = CpuSet::Range(0, 63);
    shm::ConfigSummary config{};
    config.flags = shm::kConfigStrictCpuReservation;
    Check(tx->SetTopology(topo));
    Check(tx->SetConfig(config));
    for (int i = 0; i < 10; ++i) Check(tx->UpsertClaim(Claim(i)));
    tx->Commit();
    shm::OpenOptions n;
    n.role = shm::Role::kNriAgent;
    n.version = "bench";
    auto s = shm::Segment::Open(dir.path() + "/state.shm", n);
    Check(s.status());
    nri = std::move(*s);
  }
  static std::string Uid(int i) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "00000000-0000-0000-0000-%012d", i);
    return buf;
  }
  static shm::ClaimSpec Claim(int i) {
    shm::ClaimSpec c;
    c.uid = Uid(i);
    c.namespace_ = "ns";
    c.name = "claim-" + std::to_string(i);
    c.state = shm::ClaimState::kPrepared;
    c.request_names = {"req"};
    c.cpus = CpuSet{48 + i};
    c.mems = {0};
    return c;
  }
};

nri::Container RealisticContainer(const std::string& id, int i) {
  return bench::KubeletLikeContainer(id, "sandbox-" + std::to_string(i), i, {"0-47,58-63", ""});
}

nri::Pod RealisticPod(int i) {
  return nri::Pod{"sandbox-" + std::to_string(i),
                  "pod-" + std::to_string(i),
                  "8e0c2a4e-2b1f-4b7e-9a51-" + std::to_string(i),
                  "default",
                  {{"app", "web"}, {"pod-template-hash", "5d8f7c9b6"}},
                  {{"kubernetes.io/config.seen", "2026-11-29T15:00:00Z"}}};
}

// The runtime's side of a registered plugin whose handler is the policy.
struct Harness {
  std::unique_ptr<loop::EventLoop> loop =
      std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value();
  Node node;
  // As the nri-agent configures it: a reply's moved shared containers recorded after the reply.
  policy::PinningPolicy policy{node.nri.get(), AgentPolicyOptions()};

  static policy::PolicyOptions AgentPolicyOptions() {
    policy::PolicyOptions o;
    o.record_moves_after_reply = true;
    return o;
  }
  std::unique_ptr<mux::TtrpcPeer> runtime;
  std::unique_ptr<nri::Plugin> plugin;

  Harness() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    auto r = mux::TtrpcPeer::ForRuntime(*loop, UniqueFd(sv[1]), nullptr);
    Check(r.status());
    runtime = std::move(*r);
    bool registered = false;
    runtime->server().Register(nri::kRuntimeService, "RegisterPlugin",
                               [&](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) {
                                 registered = true;
                                 done(std::string());
                               });
    auto p = nri::Plugin::Start(*loop, UniqueFd(sv[0]), {}, policy);
    Check(p.status());
    plugin = std::move(*p);
    while (!registered) Check(loop->RunOnce(1s));
  }

  void Call(const char* method, const std::string& request) {
    bool done = false;
    runtime->client().Call(nri::kPluginService, method, request, 2s, [&](Result<std::string> r) {
      Check(r.status());
      done = true;
    });
    while (!done) Check(loop->RunOnce(1s));
  }

  // Echo of a small message over its own trunk on the same loop.
  double EchoBaselineNs() { return bench::TtrpcEchoNs(*loop, 5000); }
};

std::string CreateRequest(const nri::Pod& pod, const nri::Container& c) {
  nri::api::CreateContainerRequest req;
  nri::ToProto(pod, req.mutable_pod());
  nri::ToProto(c, req.mutable_container());
  return req.SerializeAsString();
}
std::string RemoveRequest(const nri::Pod& pod, const nri::Container& c) {
  nri::api::RemoveContainerRequest req;
  nri::ToProto(pod, req.mutable_pod());
  nri::ToProto(c, req.mutable_container());
  return req.SerializeAsString();
}

// CreateContainer with `running` containers already placed (every 50th exclusive). Each
// iteration creates one more (shared, or exclusive on claim 9 with arg 1) and removes it again;
// only the CreateContainer round trip is timed for the percentiles.
void BM_PolicyCreateContainer(benchmark::State& state) {
  const int running = static_cast<int>(state.range(0));
  const bool exclusive = state.range(1) != 0;
  Harness h;
  for (int i = 0; i < running; ++i) {
    nri::Container c = RealisticContainer("running-" + std::to_string(i), i);
    if (i % 50 == 0 && i / 50 < 9) {
      c.env.push_back(ClaimEnvEntry(Node::Uid(i / 50), CpuSet{48 + i / 50}));
    }
    h.Call("CreateContainer", CreateRequest(RealisticPod(i), c));
  }
  const double echo_ns = h.EchoBaselineNs();
  std::vector<double> lat, cpu;
  int n = 0;
  for (auto _ : state) {
    const nri::Pod pod = RealisticPod(100000);
    nri::Container c = RealisticContainer("new-" + std::to_string(n++), 100000);
    if (exclusive) c.env.push_back(ClaimEnvEntry(Node::Uid(9), CpuSet{57}));
    const std::string create = CreateRequest(pod, c);
    const std::string remove = RemoveRequest(pod, c);
    const double cpu_start = ThreadCpuNs();
    const auto start = Clock::now();
    h.Call("CreateContainer", create);
    lat.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    cpu.push_back(ThreadCpuNs() - cpu_start);
    h.Call("RemoveContainer", remove);
  }
  std::sort(lat.begin(), lat.end());
  std::sort(cpu.begin(), cpu.end());
  auto pct = [](const std::vector<double>& v, double p) {
    return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
  };
  state.counters["p50_us"] = pct(lat, 0.50) / 1000.0;
  state.counters["p99_us"] = pct(lat, 0.99) / 1000.0;
  state.counters["p99_cpu_us"] = pct(cpu, 0.99) / 1000.0;
  state.counters["echo_us"] = echo_ns / 1000.0;
  state.counters["p50_x_echo"] = pct(lat, 0.50) / echo_ns;
  state.counters["p99_x_echo"] = pct(lat, 0.99) / echo_ns;
  state.counters["target_p99_us"] = 200;
}
BENCHMARK(BM_PolicyCreateContainer)->Args({500, 0})->Args({500, 1})->Iterations(2000);

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

// The exclusive container of a newly prepared claim with `running` shared containers: the
// reply shrinks every one of them off the claim's CPUs. Per iteration (untimed: the claim's
// reservation as the dra-agent makes it, and afterwards the container's removal, the release
// and the widening the agent would push) only the CreateContainer round trip is timed.
void BM_PolicyCreateExclusiveShrink(benchmark::State& state) {
  const int running = static_cast<int>(state.range(0));
  Harness h;
  for (int i = 0; i < running; ++i) {
    h.Call("CreateContainer",
           CreateRequest(RealisticPod(i), RealisticContainer("running-" + std::to_string(i), i)));
  }
  std::vector<double> lat;
  size_t reply_bytes = 0, updates = 0;
  double record_ns = 0;
  int n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    shm::ClaimSpec claim = Node::Claim(20 + n % 20);
    claim.uid = Node::Uid(1000 + n);
    claim.cpus = CpuSet{20 + n % 20};
    {
      auto tx = h.node.dra->Begin();
      Check(tx.status());
      Check(tx->UpsertClaim(claim));
      tx->Commit();
    }
    const nri::Pod pod = RealisticPod(100000);
    nri::Container c = RealisticContainer("new-" + std::to_string(n++), 100000);
    c.env.push_back(ClaimEnvEntry(claim.uid, claim.cpus));
    const std::string create = CreateRequest(pod, c);
    state.ResumeTiming();
    const double t0 = NowNs();
    double t1 = 0;
    bool done = false;
    // The clock stops when the reply has arrived: decoding it is the runtime's work, which the
    // echo baseline does not pay either.
    h.runtime->client().Call(nri::kPluginService, "CreateContainer", create, 2s,
                             [&](Result<std::string> r) {
                               t1 = NowNs();
                               Check(r.status());
                               reply_bytes = r->size();
                               nri::api::CreateContainerResponse resp;
                               resp.ParseFromString(*r);
                               updates = size_t(resp.update_size());
                               done = true;
                             });
    while (!done) Check(h.loop->RunOnce(1s));
    lat.push_back(t1 - t0);
    state.PauseTiming();
    // What the agent does once the reply is sent: off the container-start path, but the loop's.
    const double r0 = NowNs();
    Check(h.policy.RecordAfterReply());
    record_ns += NowNs() - r0;
    h.Call("RemoveContainer", RemoveRequest(pod, c));
    {
      auto tx = h.node.dra->Begin();
      Check(tx.status());
      Check(tx->RemoveClaim(claim.uid).status());
      tx->Commit();
    }
    auto widen = h.policy.PendingPoolUpdates();
    Check(widen.status());
    Check(h.policy.UpdatesApplied(*widen, {}).status());
    state.ResumeTiming();
  }
  // The baseline: the same bytes through a bare echo, plus encoding those updates.
  const std::vector<double> echo = bench::TtrpcEchoSamplesNs(*h.loop, 2000, reply_bytes);
  nri::CreateContainerResult result;
  for (size_t i = 0; i < updates; ++i) {
    result.updates.push_back({"running-" + std::to_string(i), {"0-19,40-47,58-63", ""}, false});
  }
  std::vector<double> encodes;
  for (int i = 0; i < 200; ++i) {
    const double e0 = NowNs();
    nri::api::CreateContainerResponse resp;
    nri::ToProto(result, &resp);
    benchmark::DoNotOptimize(resp.SerializeAsString());
    encodes.push_back(NowNs() - e0);
  }
  const double encode_ns = Percentile(encodes, 0.5);
  const double baseline = Percentile(echo, 0.5) + encode_ns;
  // The same tail of the baseline: what a shared machine's noise does to the echo and the
  // encoding alone in this run.
  const double baseline_p99 = Percentile(echo, 0.99) + Percentile(encodes, 0.99);
  state.counters["updates"] = double(updates);
  state.counters["reply_kb"] = double(reply_bytes) / 1024.0;
  state.counters["p50_us"] = Percentile(lat, 0.50) / 1000.0;
  state.counters["p99_us"] = Percentile(lat, 0.99) / 1000.0;
  state.counters["echo_us"] = Percentile(echo, 0.5) / 1000.0;
  state.counters["encode_us"] = encode_ns / 1000.0;
  state.counters["record_after_us"] = record_ns / double(n) / 1000.0;
  state.counters["p50_x_baseline"] = Percentile(lat, 0.50) / baseline;
  state.counters["p99_x_baseline"] = Percentile(lat, 0.99) / baseline;
  state.counters["p99_x_baseline_p99"] = Percentile(lat, 0.99) / baseline_p99;
  state.counters["target_p99_x"] = 2;
}
BENCHMARK(BM_PolicyCreateExclusiveShrink)->Arg(500)->Iterations(400)->UseRealTime();

// Synchronize of `n` containers (every 100th exclusive), as after an nri-agent restart.
void BM_PolicySynchronize(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Harness h;
  nri::api::SynchronizeRequest req;
  for (int i = 0; i < n; ++i) {
    nri::Container c = RealisticContainer("c-" + std::to_string(i), i);
    if (i % 100 == 0 && i / 100 < 10) {
      c.env.push_back(ClaimEnvEntry(Node::Uid(i / 100), CpuSet{48 + i / 100}));
    }
    nri::ToProto(RealisticPod(i), req.add_pods());
    nri::ToProto(c, req.add_containers());
  }
  const std::string request = req.SerializeAsString();
  const double echo_ns = h.EchoBaselineNs();
  double total_ns = 0, total_cpu_ns = 0;
  for (auto _ : state) {
    // Each Synchronize needs a fresh connection in real life; the policy does not care.
    const double cpu_start = ThreadCpuNs();
    const auto start = Clock::now();
    h.Call("Synchronize", request);
    total_ns += std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    total_cpu_ns += ThreadCpuNs() - cpu_start;
  }
  const double call_ns = total_ns / static_cast<double>(state.iterations());
  state.counters["call_ms"] = call_ns / 1e6;
  state.counters["cpu_ms"] = total_cpu_ns / static_cast<double>(state.iterations()) / 1e6;
  state.counters["echo_us"] = echo_ns / 1000.0;
  state.counters["x_echo"] = call_ns / echo_ns;
  state.counters["target_ms"] = 50;
}
BENCHMARK(BM_PolicySynchronize)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dracpu

BENCHMARK_MAIN();
