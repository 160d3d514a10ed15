// The NRI benchmarks' in-run baseline: the mean wall time of a 256-byte ttrpc echo over the NRI
// multiplexer on a socketpair, both peers on `loop` (the loop the measured calls run on).
// Aborts on a transport error: a benchmark that cannot measure its baseline has no result.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "nri-agent/mux/ttrpc_peer.h"

namespace dracpu::bench {

// Each round's wall time of a 256-byte ttrpc echo between two peers on `loop`, answered with
// `reply_bytes` bytes (the size of the reply a benchmark compares with): for percentiles of a
// baseline of that size.
inline std::vector<double> TtrpcEchoSamplesNs(loop::EventLoop& loop, int rounds,
                                              size_t reply_bytes) {
  using namespace std::chrono_literals;
  auto check = [](const Status& s) {
    if (s.ok()) return;
    std::fprintf(stderr, "ttrpc echo baseline: %s\n", s.ToString().c_str());
    std::abort();
  };
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  auto a = mux::TtrpcPeer::ForPlugin(loop, UniqueFd(sv[0]), nullptr);
  auto b = mux::TtrpcPeer::ForRuntime(loop, UniqueFd(sv[1]), nullptr);
  check(a.status());
  check(b.status());
  const std::string answer(reply_bytes, 'r');
  (*a)->server().Register(
      "bench.Echo", "Echo",
      [&answer](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) { done(answer); });
  const std::string payload(256, 'e');
  std::vector<double> out;
  out.reserve(static_cast<size_t>(rounds));
  for (int i = 0; i < rounds; ++i) {
    bool done = false;
    const auto t0 = std::chrono::steady_clock::now();
    (*b)->client().Call("bench.Echo", "Echo", payload, 2s, [&](Result<std::string> r) {
      check(r.status());
      done = true;
    });
    while (!done) check(loop.RunOnce(1s));
    out.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  return out;
}

// The mean wall time of one 256-byte echo round trip.
inline double TtrpcEchoNs(loop::EventLoop& loop, int rounds) {
  const std::vector<double> samples = TtrpcEchoSamplesNs(loop, rounds, 256);
  return std::accumulate(samples.begin(), samples.end(), 0.0) / rounds;
}

}  // namespace dracpu::bench
