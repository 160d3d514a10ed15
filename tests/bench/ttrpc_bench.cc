// The transport baseline: one ttrpc unary echo round trip over the NRI multiplexer on a
// socketpair, client and server on one event loop (as in the agent: one thread). Later NRI
// benchmarks (CreateContainer, Synchronize) report themselves as a ratio to this.
//
// The NRI adapter benchmarks below (CreateContainer, Synchronize of 1000 containers through
// nri::Plugin with a handler that does no policy work) report `x_echo` against a small echo
// measured on the same trunk in the same run.
//
// Each echo benchmark also measures, in the same run, a bare socketpair ping-pong (write, read,
// write back, read: the syscalls alone) and reports `x_socketpair` = echo / ping-pong, so the
// cost of our framing, envelopes and loop shows apart from the kernel's.
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "nri-agent/mux/ttrpc_peer.h"
#include "nri-agent/nri/convert.h"
#include "nri-agent/nri/plugin.h"
#include "tests/bench/kubelet_like_container.h"
#include "tests/testing/quiet_plugin_handler.h"
#include "tests/testing/real_clock.h"

namespace dracpu {
namespace {

using namespace std::chrono_literals;

constexpr char kService[] = "bench.Echo";

void Check(const Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "ttrpc_bench: %s\n", s.ToString().c_str());
    std::abort();
  }
}

// Nanoseconds per bare socketpair round trip of `size` bytes each way.
double SocketpairRoundTripNs(size_t size) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  UniqueFd a(sv[0]), b(sv[1]);
  std::string buf(size == 0 ? 1 : size, 'p');
  auto move_bytes = [&](int from, int to) {
    size_t sent = 0;
    while (sent < buf.size()) {
      const ssize_t n =
          ::write(from, buf.data() + sent, std::min<size_t>(buf.size() - sent, 65536));
      if (n <= 0) std::abort();
      size_t got = 0;
      while (got < static_cast<size_t>(n)) {
        const ssize_t r = ::read(to, buf.data(), static_cast<size_t>(n) - got);
        if (r <= 0) std::abort();
        got += static_cast<size_t>(r);
      }
      sent += static_cast<size_t>(n);
    }
  };
  constexpr int kRounds = 2000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    move_bytes(a.get(), b.get());
    move_bytes(b.get(), a.get());
  }
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / kRounds;
}

void BM_TtrpcEchoOverMux(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  auto loop = std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  auto plugin = mux::TtrpcPeer::ForPlugin(*loop, UniqueFd(sv[0]), nullptr);
  auto runtime = mux::TtrpcPeer::ForRuntime(*loop, UniqueFd(sv[1]), nullptr);
  Check(plugin.status());
  Check(runtime.status());
  (*runtime)->server().Register(
      kService, "Echo",
      [](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) { done(std::move(p)); });
  const std::string payload(size, 'e');
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    bool done = false;
    (*plugin)->client().Call(kService, "Echo", payload, 2s, [&](Result<std::string> r) {
      Check(r.status());
      benchmark::DoNotOptimize(r->size());
      done = true;
    });
    while (!done) Check(loop->RunOnce(1s));
  }
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  const double echo_ns = elapsed.count() / static_cast<double>(state.iterations());
  const double raw_ns = SocketpairRoundTripNs(size);
  state.counters["rtt_us"] = echo_ns / 1000.0;
  state.counters["socketpair_rtt_us"] = raw_ns / 1000.0;
  state.counters["x_socketpair"] = echo_ns / raw_ns;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size * 2));
}
BENCHMARK(BM_TtrpcEchoOverMux)->Arg(0)->Arg(256)->Arg(4096)->Arg(64 << 10)->Arg(1 << 20);

// --- The NRI adapter over the same transport, as a ratio to the echo baseline. ---------------
// The handler does no policy work: these measure what the adapter and transport add to each
// NRI call (decode, convert to plain structs, convert back, encode). The policy benchmarks of
// issue 7 item 8 add their work on top and compare to the same echo.

class TrivialHandler : public testing::QuietPluginHandler {
 public:
  Result<nri::EventMask> Configure(const nri::RuntimeInfo&) override { return 0x608; }
  Result<std::vector<nri::CpusetUpdate>> Synchronize(
      const std::vector<nri::Pod>&, const std::vector<nri::Container>& containers) override {
    std::vector<nri::CpusetUpdate> updates;
    for (const auto& c : containers) updates.push_back({c.id, {"0-3", ""}, false});
    return updates;
  }
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod&,
                                                     const nri::Container&) override {
    return nri::CreateContainerResult{{"2-3", ""}, {}};
  }
};

// A container as a kubelet would create it: a dozen env vars and annotations.
nri::Container RealisticContainer(int i) {
  nri::Container c = bench::KubeletLikeContainer(
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab" + std::to_string(i),
      "fedcba9876543210fedcba9876543210fedcba9876543210fedcba98765432", i, {"0-63", "0-1"});
  c.pid = 1000 + static_cast<uint32_t>(i);
  return c;
}

nri::Pod RealisticPod(int i) {
  return nri::Pod{
      "fedcba9876543210fedcba9876543210fedcba9876543210fedcba987654" + std::to_string(i),
      "pod-" + std::to_string(i),
      "8e0c2a4e-2b1f-4b7e-9a51-" + std::to_string(i),
      "default",
      {{"app", "web"}, {"pod-template-hash", "5d8f7c9b6"}},
      {{"kubernetes.io/config.seen", "2026-11-29T15:00:00Z"}}};
}

// Echo of a small message over its own trunk on the same loop: the baseline measured in this
// run for the NRI ratios.
double EchoBaselineNs(loop::EventLoop& loop) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  auto plugin = mux::TtrpcPeer::ForPlugin(loop, UniqueFd(sv[0]), nullptr);
  auto runtime = mux::TtrpcPeer::ForRuntime(loop, UniqueFd(sv[1]), nullptr);
  Check(plugin.status());
  Check(runtime.status());
  (*plugin)->server().Register(
      kService, "Echo",
      [](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) { done(std::move(p)); });
  constexpr int kRounds = 5000;
  const std::string payload(256, 'e');
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    bool done = false;
    (*runtime)->client().Call(kService, "Echo", payload, 2s, [&](Result<std::string> r) {
      Check(r.status());
      done = true;
    });
    while (!done) Check(loop.RunOnce(1s));
  }
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / kRounds;
}

// The runtime's side (a bare TtrpcPeer) calling `method` on a registered, configured Plugin.
void RunNriCall(benchmark::State& state, const char* method, const std::string& request) {
  auto loop = std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  auto runtime = mux::TtrpcPeer::ForRuntime(*loop, UniqueFd(sv[1]), nullptr);
  Check(runtime.status());
  bool registered = false;
  (*runtime)->server().Register(nri::kRuntimeService, "RegisterPlugin",
                                [&](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) {
                                  registered = true;
                                  done(std::string());
                                });
  TrivialHandler handler;
  auto plugin = nri::Plugin::Start(*loop, UniqueFd(sv[0]), {}, handler);
  Check(plugin.status());
  while (!registered) Check(loop->RunOnce(1s));
  const double echo_ns = EchoBaselineNs(*loop);

  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    bool done = false;
    (*runtime)->client().Call(nri::kPluginService, method, request, 2s, [&](Result<std::string> r) {
      Check(r.status());
      done = true;
    });
    while (!done) Check(loop->RunOnce(1s));
  }
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  const double call_ns = elapsed.count() / static_cast<double>(state.iterations());
  state.counters["call_us"] = call_ns / 1000.0;
  state.counters["echo_us"] = echo_ns / 1000.0;
  state.counters["x_echo"] = call_ns / echo_ns;
  state.counters["request_bytes"] = static_cast<double>(request.size());
}

void BM_NriAdapterCreateContainer(benchmark::State& state) {
  nri::api::CreateContainerRequest req;
  nri::ToProto(RealisticPod(1), req.mutable_pod());
  nri::ToProto(RealisticContainer(1), req.mutable_container());
  RunNriCall(state, "CreateContainer", req.SerializeAsString());
}
BENCHMARK(BM_NriAdapterCreateContainer);

void BM_NriAdapterSynchronize(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  nri::api::SynchronizeRequest req;
  for (int i = 0; i < n; ++i) {
    nri::ToProto(RealisticPod(i), req.add_pods());
    nri::ToProto(RealisticContainer(i), req.add_containers());
  }
  RunNriCall(state, "Synchronize", req.SerializeAsString());
}
BENCHMARK(BM_NriAdapterSynchronize)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dracpu

BENCHMARK_MAIN();
