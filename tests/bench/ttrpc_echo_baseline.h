// The NRI benchmarks' in-run baseline: the mean wall time of a 256-byte ttrpc echo over the NRI
// multiplexer on a socketpair, both peers on `loop` (the loop the measured calls run on).
// Aborts on a transport error: a benchmark that cannot measure its baseline has no result.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nri-agent/loop/event_loop.h"
#include "nri-agent/mux/ttrpc_peer.h"

namespace dracpu::bench {

inline double TtrpcEchoNs(loop::EventLoop& loop, int rounds) {
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
  (*a)->server().Register(
      "bench.Echo", "Echo",
      [](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) { done(std::move(p)); });
  const std::string payload(256, 'e');
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < rounds; ++i) {
    bool done = false;
    (*b)->client().Call("bench.Echo", "Echo", payload, 2s, [&](Result<std::string> r) {
      check(r.status());
      done = true;
    });
    while (!done) check(loop.RunOnce(1s));
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
             .count() /
         rounds;
}

// Each round's wall time of the same echo, answered with `reply_bytes` bytes instead (the size
// of the reply a benchmark compares with): for percentiles of a baseline of that size.
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

}  // namespace dracpu::bench
