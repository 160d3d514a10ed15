// The transport baseline: one ttrpc unary echo round trip over the NRI multiplexer on a
// socketpair, client and server on one event loop (as in the agent: one thread). Later NRI
// benchmarks (CreateContainer, Synchronize) report themselves as a ratio to this.
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

#include "nri-agent/loop/event_loop.h"
#include "nri-agent/mux/ttrpc_peer.h"

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
      const ssize_t n = ::write(from, buf.data() + sent, std::min<size_t>(buf.size() - sent, 65536));
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
  auto loop = std::move(loop::EventLoop::Create()).value();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  auto plugin = mux::TtrpcPeer::ForPlugin(*loop, UniqueFd(sv[0]), nullptr);
  auto runtime = mux::TtrpcPeer::ForRuntime(*loop, UniqueFd(sv[1]), nullptr);
  Check(plugin.status());
  Check(runtime.status());
  (*runtime)->server().Register(kService, "Echo", [](const ttrpc::CallInfo&, std::string p,
                                                     ttrpc::Responder done) {
    done(std::move(p));
  });
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

}  // namespace
}  // namespace dracpu

BENCHMARK_MAIN();
