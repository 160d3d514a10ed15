// Two TtrpcPeers, a "plugin" and a "runtime", on the two ends of a socketpair, both on one event
// loop: whole calls through ttrpc and the multiplexer, as in NRI. The method names are only
// labels here; the transport gives them no meaning.
#include "nri-agent/mux/ttrpc_peer.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "nri-agent/ttrpc/envelope.h"
#include "nri-agent/ttrpc/frame.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::mux {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr char kRuntime[] = "nri.pkg.api.v1alpha1.Runtime";
constexpr char kPlugin[] = "nri.pkg.api.v1alpha1.Plugin";

std::pair<UniqueFd, UniqueFd> SocketPair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

class TtrpcPeerTest : public ::testing::Test {
 protected:
  TtrpcPeerTest()
      : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {
    auto [a, b] = SocketPair();
    auto plugin =
        TtrpcPeer::ForPlugin(*loop_, std::move(a), [this](const Status& s) { plugin_closed_ = s; });
    auto runtime = TtrpcPeer::ForRuntime(*loop_, std::move(b),
                                         [this](const Status& s) { runtime_closed_ = s; });
    EXPECT_THAT(plugin, IsOk());
    EXPECT_THAT(runtime, IsOk());
    plugin_ = std::move(plugin).value();
    runtime_ = std::move(runtime).value();
  }

  template <typename Pred>
  void RunUntil(Pred done) {
    for (int i = 0; i < 100000 && !done(); ++i) ASSERT_THAT(loop_->RunOnce(100ms), IsOk());
    ASSERT_TRUE(done());
  }

  std::unique_ptr<loop::EventLoop> loop_;
  std::unique_ptr<TtrpcPeer> plugin_;
  std::unique_ptr<TtrpcPeer> runtime_;
  std::optional<Status> plugin_closed_;
  std::optional<Status> runtime_closed_;
};

TEST_F(TtrpcPeerTest, CallsGoBothWaysOnTheirOwnConnections) {
  runtime_->server().Register(
      kRuntime, "Echo", [](const ttrpc::CallInfo& call, std::string p, ttrpc::Responder done) {
        EXPECT_EQ(call.stream_id, 1u);
        done("runtime:" + p);
      });
  plugin_->server().Register(
      kPlugin, "Echo", [](const ttrpc::CallInfo& call, std::string p, ttrpc::Responder done) {
        EXPECT_EQ(call.stream_id, 1u);  // each direction has its own stream ids
        done("plugin:" + p);
      });
  std::optional<Result<std::string>> to_runtime, to_plugin;
  plugin_->client().Call(kRuntime, "Echo", "a", 1s, [&](Result<std::string> r) { to_runtime = r; });
  runtime_->client().Call(kPlugin, "Echo", "b", 1s, [&](Result<std::string> r) { to_plugin = r; });
  RunUntil([&] { return to_runtime && to_plugin; });
  EXPECT_THAT(*to_runtime, IsOkAndHolds(std::string("runtime:a")));
  EXPECT_THAT(*to_plugin, IsOkAndHolds(std::string("plugin:b")));
}

TEST_F(TtrpcPeerTest, ServerAnswersAnIncomingCallWhileOurOwnCallWaits) {
  // NRI's registration order (protocols.md §4.1): the runtime answers RegisterPlugin only after
  // it has called Configure on the plugin and got the answer. The plugin must serve Configure
  // while its RegisterPlugin call is still pending.
  std::vector<std::string> order;
  runtime_->server().Register(
      kRuntime, "RegisterPlugin", [&](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) {
        order.push_back("runtime got RegisterPlugin");
        runtime_->client().Call(kPlugin, "Configure", "cfg", 2s, [&, done](Result<std::string> r) {
          EXPECT_THAT(r, IsOkAndHolds(std::string("events")));
          order.push_back("runtime got Configure answer");
          done(std::string());
        });
      });
  plugin_->server().Register(kPlugin, "Configure",
                             [&](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) {
                               EXPECT_EQ(p, "cfg");
                               order.push_back("plugin got Configure");
                               done(std::string("events"));
                             });
  std::optional<Result<std::string>> registered;
  plugin_->client().Call(kRuntime, "RegisterPlugin", "me", 5s, [&](Result<std::string> r) {
    order.push_back("plugin got RegisterPlugin answer");
    registered = r;
  });
  RunUntil([&] { return registered.has_value(); });
  EXPECT_THAT(*registered, IsOk());
  EXPECT_THAT(order,
              ElementsAre("runtime got RegisterPlugin", "plugin got Configure",
                          "runtime got Configure answer", "plugin got RegisterPlugin answer"));
}

TEST_F(TtrpcPeerTest, ManyConcurrentCallsAnsweredInReverseOrder) {
  constexpr int kCalls = 200;
  std::vector<std::pair<std::string, ttrpc::Responder>> held;
  runtime_->server().Register(kRuntime, "Hold",
                              [&](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) {
                                held.emplace_back(std::move(p), std::move(done));
                              });
  std::vector<std::string> got(kCalls);
  int completed = 0;
  for (int i = 0; i < kCalls; ++i) {
    plugin_->client().Call(kRuntime, "Hold", std::to_string(i), 10s, [&, i](Result<std::string> r) {
      ASSERT_THAT(r, IsOk());
      got[i] = *r;
      ++completed;
    });
  }
  RunUntil([&] { return held.size() == kCalls; });
  EXPECT_EQ(runtime_->server().in_flight(), static_cast<size_t>(kCalls));
  for (auto it = held.rbegin(); it != held.rend(); ++it) it->second("answer " + it->first);
  RunUntil([&] { return completed == kCalls; });
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(got[i], "answer " + std::to_string(i));
  EXPECT_EQ(plugin_->client().pending(), 0u);
}

TEST_F(TtrpcPeerTest, UnknownMethodIsUnimplemented) {
  plugin_->server().Register(
      kPlugin, "Configure",
      [](const ttrpc::CallInfo&, std::string, ttrpc::Responder done) { done(std::string()); });
  std::optional<Result<std::string>> method, service;
  runtime_->client().Call(kPlugin, "RunPodSandbox", "", 1s,
                          [&](Result<std::string> r) { method = r; });
  runtime_->client().Call("other.Service", "X", "", 1s,
                          [&](Result<std::string> r) { service = r; });
  RunUntil([&] { return method && service; });
  EXPECT_THAT(*method, StatusIs(StatusCode::kUnimplemented, HasSubstr("RunPodSandbox")));
  EXPECT_THAT(*service, StatusIs(StatusCode::kUnimplemented, HasSubstr("other.Service")));
}

TEST_F(TtrpcPeerTest, LargeMessagesRoundTripAndOverFourMiBIsResourceExhausted) {
  runtime_->server().Register(
      kRuntime, "Echo",
      [](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) { done(std::move(p)); });
  const std::string big(3 << 20, 'x');
  std::optional<Result<std::string>> ok, too_big;
  plugin_->client().Call(kRuntime, "Echo", big, 10s, [&](Result<std::string> r) { ok = r; });
  plugin_->client().Call(kRuntime, "Echo", std::string(ttrpc::kMaxMessageSize + 1, 'y'), 10s,
                         [&](Result<std::string> r) { too_big = r; });
  RunUntil([&] { return ok && too_big; });
  EXPECT_THAT(*ok, IsOkAndHolds(big));
  EXPECT_THAT(*too_big, StatusIs(StatusCode::kResourceExhausted));
}

TEST_F(TtrpcPeerTest, PeerSendingOverFourMiBGetsResourceExhaustedAndTheConnectionSurvives) {
  // A client that does not check sizes (our own client refuses to send one): hand-made frames
  // on a raw trunk, a 4 MiB + 1 request cut into Go-sized mux frames, then a normal request.
  auto [a, raw] = SocketPair();
  std::optional<Status> closed;
  auto plugin = TtrpcPeer::ForPlugin(*loop_, std::move(a), [&](const Status& s) { closed = s; });
  ASSERT_THAT(plugin, IsOk());
  (*plugin)->server().Register(
      kPlugin, "Echo",
      [](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) { done(std::move(p)); });
  ttrpc::Request request;
  request.service = kPlugin;
  request.method = "Echo";
  request.payload = std::string(ttrpc::kMaxMessageSize, 'p');  // envelope pushes it over
  const std::string data = ttrpc::EncodeRequest(request);
  ASSERT_GT(data.size(), ttrpc::kMaxMessageSize);
  std::string message(ttrpc::kFrameHeaderSize, '\0');
  ttrpc::EncodeFrameHeader(ttrpc::FrameHeader{static_cast<uint32_t>(data.size()), 1, 1, 0},
                           message.data());
  message += data;
  request.payload = "small";
  std::string wire;
  for (size_t off = 0; off < message.size(); off += kGoReadBufferSize) {
    ASSERT_THAT(
        AppendMessageFrames(kPluginServiceConn,
                            std::string_view(message).substr(off, kGoReadBufferSize), &wire),
        IsOk());
  }
  ASSERT_THAT(AppendMessageFrames(kPluginServiceConn,
                                  *ttrpc::EncodeFrame(3, ttrpc::MessageType::kRequest, 0,
                                                      ttrpc::EncodeRequest(request)),
                                  &wire),
              IsOk());
  // Write while the loop reads, then collect the two answers.
  ::fcntl(raw.get(), F_SETFL, ::fcntl(raw.get(), F_GETFL) | O_NONBLOCK);
  size_t off = 0;
  std::string answers;
  FrameDecoder mux_decoder;
  ttrpc::FrameDecoder ttrpc_decoder;
  std::vector<ttrpc::Frame> frames;
  char buf[4096];
  for (int i = 0; i < 1000000 && frames.size() < 2 && !closed; ++i) {
    if (off < wire.size()) {
      const ssize_t n = ::write(raw.get(), wire.data() + off, wire.size() - off);
      if (n > 0) off += static_cast<size_t>(n);
    }
    ASSERT_THAT(loop_->RunOnce(0ms), IsOk());
    const ssize_t r = ::read(raw.get(), buf, sizeof(buf));
    if (r > 0) {
      ASSERT_THAT(mux_decoder.Feed(std::string_view(buf, static_cast<size_t>(r)),
                                   [&](uint32_t conn, std::string_view p) {
                                     EXPECT_EQ(conn, kPluginServiceConn);
                                     return ttrpc_decoder.Feed(p, &frames);
                                   }),
                  IsOk());
    }
  }
  EXPECT_FALSE(closed.has_value());
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].header.stream_id, 1u);
  auto first = ttrpc::DecodeResponse(frames[0].data);
  ASSERT_THAT(first, IsOk());
  EXPECT_THAT(first->status, StatusIs(StatusCode::kResourceExhausted));
  EXPECT_EQ(frames[1].header.stream_id, 3u);
  auto second = ttrpc::DecodeResponse(frames[1].data);
  ASSERT_THAT(second, IsOk());
  EXPECT_THAT(second->status, IsOk());
  EXPECT_EQ(second->payload, "small");
}

// A hostile or broken runtime on a raw trunk: one request trickled a byte per mux frame over
// many loop turns with an answer to a call never made interleaved on the other connection, then
// a request, a request re-using its stream id, and another. Each request gets its own answer in
// order, the stray answer none, and the connection keeps serving.
TEST_F(TtrpcPeerTest, SlowOutOfOrderAndStrayFramesAreEachAnsweredAndTheConnectionSurvives) {
  auto [a, raw] = SocketPair();
  std::optional<Status> closed;
  auto plugin = TtrpcPeer::ForPlugin(*loop_, std::move(a), [&](const Status& s) { closed = s; });
  ASSERT_THAT(plugin, IsOk());
  (*plugin)->server().Register(
      kPlugin, "Echo",
      [](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) { done(std::move(p)); });
  auto request = [](uint32_t stream, const std::string& payload) {
    ttrpc::Request r;
    r.service = kPlugin;
    r.method = "Echo";
    r.payload = payload;
    return *ttrpc::EncodeFrame(stream, ttrpc::MessageType::kRequest, 0, ttrpc::EncodeRequest(r));
  };
  auto on_conn = [](uint32_t conn, std::string_view message) {
    std::string wire;
    EXPECT_THAT(AppendMessageFrames(conn, message, &wire), IsOk());
    return wire;
  };
  ::fcntl(raw.get(), F_SETFL, ::fcntl(raw.get(), F_GETFL) | O_NONBLOCK);
  FrameDecoder mux_decoder;
  ttrpc::FrameDecoder ttrpc_decoder;
  std::vector<ttrpc::Frame> answers;
  auto turn = [&](std::string_view bytes) {
    ASSERT_EQ(::write(raw.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ASSERT_THAT(loop_->RunOnce(0ms), IsOk());
    char buf[4096];
    const ssize_t r = ::read(raw.get(), buf, sizeof(buf));
    if (r <= 0) return;
    ASSERT_THAT(mux_decoder.Feed(
                    std::string_view(buf, static_cast<size_t>(r)),
                    [&](uint32_t, std::string_view p) { return ttrpc_decoder.Feed(p, &answers); }),
                IsOk());
  };
  const std::string slow = request(1, "slow");
  const std::string stray =
      *ttrpc::EncodeFrame(99, ttrpc::MessageType::kResponse, 0,
                          ttrpc::EncodeResponse(ttrpc::Response{Status::Ok(), "?"}));
  for (size_t i = 0; i < slow.size(); ++i) {
    turn(on_conn(kPluginServiceConn, slow.substr(i, 1)));
    if (i == slow.size() / 2) turn(on_conn(kRuntimeServiceConn, stray));
  }
  turn(on_conn(kPluginServiceConn, request(3, "next")));
  turn(on_conn(kPluginServiceConn, request(3, "re-used id")));
  turn(on_conn(kPluginServiceConn, request(7, "still serving")));
  for (int i = 0; i < 100 && answers.size() < 4; ++i) turn("");
  EXPECT_FALSE(closed.has_value());
  ASSERT_EQ(answers.size(), 4u);
  std::vector<std::pair<uint32_t, std::string>> got;
  for (const ttrpc::Frame& f : answers) {
    auto response = ttrpc::DecodeResponse(f.data);
    ASSERT_THAT(response, IsOk());
    got.emplace_back(f.header.stream_id,
                     response->status.ok() ? response->payload : response->status.ToString());
  }
  EXPECT_THAT(got, ElementsAre(std::pair<uint32_t, std::string>(1, "slow"),
                               std::pair<uint32_t, std::string>(3, "next"),
                               std::pair<uint32_t, std::string>(
                                   3,
                                   "INVALID_ARGUMENT: StreamID cannot be re-used and must "
                                   "increment"),
                               std::pair<uint32_t, std::string>(7, "still serving")));
}

TEST_F(TtrpcPeerTest, UnansweredCallTimesOut) {
  runtime_->server().Register(kRuntime, "Never",
                              [](const ttrpc::CallInfo&, std::string, ttrpc::Responder) {});
  std::optional<Result<std::string>> got;
  plugin_->client().Call(kRuntime, "Never", "", 5ms, [&](Result<std::string> r) { got = r; });
  RunUntil([&] { return got.has_value(); });
  EXPECT_THAT(*got, StatusIs(StatusCode::kDeadlineExceeded));
  EXPECT_FALSE(plugin_closed_.has_value());  // a timeout is the call's, not the connection's
}

TEST_F(TtrpcPeerTest, PeerGoingAwayFailsPendingCalls) {
  runtime_->server().Register(kRuntime, "Never",
                              [](const ttrpc::CallInfo&, std::string, ttrpc::Responder) {});
  std::optional<Result<std::string>> got;
  plugin_->client().Call(kRuntime, "Never", "", 0ns, [&](Result<std::string> r) { got = r; });
  RunUntil([&] { return runtime_->server().in_flight() == 1; });
  runtime_->Close(Status(StatusCode::kCancelled, "test closes the runtime"));
  RunUntil([&] { return got.has_value(); });
  EXPECT_THAT(*got, StatusIs(StatusCode::kUnavailable));
  ASSERT_TRUE(plugin_closed_.has_value());
  EXPECT_THAT(*plugin_closed_, StatusIs(StatusCode::kUnavailable));
}

}  // namespace
}  // namespace dracpu::mux
