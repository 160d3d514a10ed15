// Server and Client over in-memory sinks: every message either side sends is queued and
// delivered only when the test says so, so orderings (late answers, answers out of order, a
// close in between) are exact. Socket tests live in nri-agent/mux/.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "nri-agent/ttrpc/client.h"
#include "nri-agent/ttrpc/envelope.h"
#include "nri-agent/ttrpc/frame.h"
#include "nri-agent/ttrpc/server.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::ttrpc {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class QueueSink : public MessageSink {
 public:
  Status Send(std::string message) override {
    if (closed) return UnavailableError("closed");
    messages.push_back(std::move(message));
    return Status::Ok();
  }
  std::deque<std::string> messages;
  bool closed = false;
};

// Decodes the single Response frame in `message`.
std::pair<uint32_t, Response> ParseResponse(const std::string& message) {
  FrameDecoder decoder;
  std::vector<Frame> frames;
  EXPECT_THAT(decoder.Feed(message, &frames), IsOk());
  EXPECT_EQ(frames.size(), 1u);
  if (frames.empty()) return {};
  EXPECT_EQ(frames[0].header.type, static_cast<uint8_t>(MessageType::kResponse));
  auto response = DecodeResponse(frames[0].data);
  EXPECT_THAT(response, IsOk());
  return {frames[0].header.stream_id, response.ok() ? *response : Response{}};
}

std::string RequestFrame(uint32_t id, std::string service, std::string method,
                         std::string payload = "") {
  Request r;
  r.service = std::move(service);
  r.method = std::move(method);
  r.payload = std::move(payload);
  return *EncodeFrame(id, MessageType::kRequest, 0, EncodeRequest(r));
}

class ServerTest : public ::testing::Test {
 protected:
  ServerTest() {
    server_.Register("svc", "Echo", [](const CallInfo&, std::string payload, Responder done) {
      done(std::move(payload));
    });
    server_.Register("svc", "Big", [](const CallInfo&, std::string, Responder done) {
      done(std::string(kMaxMessageSize, 'b'));
    });
    server_.Register("svc", "Fail", [](const CallInfo&, std::string, Responder done) {
      done(FailedPreconditionError("nope"));
    });
  }
  QueueSink sink_;
  Server server_{sink_};
};

struct ServerCase {
  const char* name;
  std::string input;  // bytes the client sends
  uint32_t want_stream;
  StatusCode want_code;
  std::string want_message;  // substring
  std::string want_payload;
};

TEST_F(ServerTest, AnswersTable) {
  std::string oversized(kFrameHeaderSize, '\0');
  EncodeFrameHeader(FrameHeader{kMaxMessageSize + 1, 1, 1, 0}, oversized.data());
  oversized += std::string(kMaxMessageSize + 1, 'o');
  const ServerCase cases[] = {
      {"echo", RequestFrame(1, "svc", "Echo", "hi"), 1, StatusCode::kOk, "", "hi"},
      {"handler error", RequestFrame(1, "svc", "Fail"), 1, StatusCode::kFailedPrecondition, "nope",
       ""},
      {"unknown method", RequestFrame(1, "svc", "Nope"), 1, StatusCode::kUnimplemented,
       "method Nope", ""},
      {"unknown service", RequestFrame(3, "other", "Echo"), 3, StatusCode::kUnimplemented,
       "service other", ""},
      {"even stream id", RequestFrame(2, "svc", "Echo"), 2, StatusCode::kInvalidArgument, "odd",
       ""},
      {"request over 4 MiB", oversized, 1, StatusCode::kResourceExhausted, "exceeds", ""},
      {"answer over 4 MiB", RequestFrame(1, "svc", "Big"), 1, StatusCode::kResourceExhausted,
       "exceeds", ""},
      {"garbage envelope", *EncodeFrame(1, MessageType::kRequest, 0, "\x0a\x7f"), 1,
       StatusCode::kInvalidArgument, "parse", ""},
  };
  for (const ServerCase& c : cases) {
    SCOPED_TRACE(c.name);
    QueueSink sink;
    Server server(sink);
    server.Register("svc", "Echo",
                    [](const CallInfo&, std::string p, Responder done) { done(std::move(p)); });
    server.Register("svc", "Big", [](const CallInfo&, std::string, Responder done) {
      done(std::string(kMaxMessageSize, 'b'));
    });
    server.Register("svc", "Fail", [](const CallInfo&, std::string, Responder done) {
      done(FailedPreconditionError("nope"));
    });
    ASSERT_THAT(server.OnBytes(c.input), IsOk());
    ASSERT_EQ(sink.messages.size(), 1u);
    auto [id, response] = ParseResponse(sink.messages.front());
    EXPECT_EQ(id, c.want_stream);
    EXPECT_EQ(response.status.code(), c.want_code);
    EXPECT_THAT(response.status.message(), HasSubstr(c.want_message));
    EXPECT_EQ(response.payload, c.want_payload);
    EXPECT_EQ(server.in_flight(), 0u);
  }
}

TEST_F(ServerTest, StreamIdsMustIncrease) {
  ASSERT_THAT(server_.OnBytes(RequestFrame(5, "svc", "Echo", "a")), IsOk());
  ASSERT_THAT(server_.OnBytes(RequestFrame(3, "svc", "Echo", "b")), IsOk());
  ASSERT_THAT(server_.OnBytes(RequestFrame(5, "svc", "Echo", "c")), IsOk());
  ASSERT_EQ(sink_.messages.size(), 3u);
  EXPECT_THAT(ParseResponse(sink_.messages[0]).second.status, IsOk());
  EXPECT_THAT(ParseResponse(sink_.messages[1]).second.status,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("re-used")));
  EXPECT_THAT(ParseResponse(sink_.messages[2]).second.status,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("re-used")));
}

TEST_F(ServerTest, DataFramesAndUnknownTypesAreIgnored) {
  std::string stream = *EncodeFrame(1, MessageType::kData, 0, "d");
  stream += *EncodeFrame(1, static_cast<MessageType>(0x7f), 0, "?");
  stream += RequestFrame(1, "svc", "Echo", "after");
  ASSERT_THAT(server_.OnBytes(stream), IsOk());
  ASSERT_EQ(sink_.messages.size(), 1u);
  EXPECT_EQ(ParseResponse(sink_.messages[0]).second.payload, "after");
}

TEST(Server, DeferredAnswersKeepOtherCallsFlowingAndASecondAnswerIsDropped) {
  QueueSink sink;
  Server server(sink);
  std::vector<Responder> held;
  server.Register("svc", "Hold", [&](const CallInfo& call, std::string, Responder done) {
    EXPECT_EQ(call.method, "Hold");
    held.push_back(std::move(done));
  });
  server.Register("svc", "Echo",
                  [](const CallInfo&, std::string p, Responder done) { done(std::move(p)); });
  ASSERT_THAT(server.OnBytes(RequestFrame(1, "svc", "Hold")), IsOk());
  ASSERT_THAT(server.OnBytes(RequestFrame(3, "svc", "Echo", "e")), IsOk());
  EXPECT_EQ(server.in_flight(), 1u);
  ASSERT_EQ(sink.messages.size(), 1u);  // Echo answered while Hold waits
  EXPECT_EQ(ParseResponse(sink.messages[0]).first, 3u);
  ASSERT_EQ(held.size(), 1u);
  held[0](std::string("late"));
  held[0](std::string("again"));
  ASSERT_EQ(sink.messages.size(), 2u);
  EXPECT_EQ(ParseResponse(sink.messages[1]).first, 1u);
  EXPECT_EQ(ParseResponse(sink.messages[1]).second.payload, "late");
  EXPECT_EQ(server.in_flight(), 0u);
}

TEST(Server, ResponderAfterCloseOrDestructionDoesNothing) {
  QueueSink sink;
  std::vector<Responder> held;
  {
    Server server(sink);
    server.Register("svc", "Hold", [&](const CallInfo&, std::string, Responder done) {
      held.push_back(std::move(done));
    });
    ASSERT_THAT(server.OnBytes(RequestFrame(1, "svc", "Hold")), IsOk());
    ASSERT_THAT(server.OnBytes(RequestFrame(3, "svc", "Hold")), IsOk());
    server.OnClosed();
    held[0](std::string("x"));
  }
  held[1](std::string("y"));  // the Server is gone
  EXPECT_TRUE(sink.messages.empty());
}

// A client and a server joined by two queues the test pumps.
class ClientTest : public ::testing::Test {
 protected:
  ClientTest() : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {}

  // Delivers everything queued, both ways, until quiet.
  void Pump() {
    for (int i = 0; i < 100 && !(to_server_.messages.empty() && to_client_.messages.empty()); ++i) {
      while (!to_server_.messages.empty()) {
        std::string m = std::move(to_server_.messages.front());
        to_server_.messages.pop_front();
        ASSERT_THAT(server_.OnBytes(m), IsOk());
      }
      while (!to_client_.messages.empty()) {
        std::string m = std::move(to_client_.messages.front());
        to_client_.messages.pop_front();
        ASSERT_THAT(client_.OnBytes(m), IsOk());
      }
    }
  }
  void RunLoop() {
    for (int i = 0; i < 3; ++i) ASSERT_THAT(loop_->RunOnce(0ms), IsOk());
  }

  std::unique_ptr<loop::EventLoop> loop_;
  QueueSink to_server_;
  QueueSink to_client_;
  Client client_{to_server_, *loop_};
  Server server_{to_client_};
};

TEST_F(ClientTest, StreamIdsAreOddAndIncreasing) {
  for (int i = 0; i < 3; ++i) client_.Call("svc", "M", "", 0ns, [](Result<std::string>) {});
  std::vector<uint32_t> ids;
  for (const std::string& m : to_server_.messages)
    ids.push_back(DecodeFrameHeader(m.data()).stream_id);
  EXPECT_THAT(ids, ElementsAre(1u, 3u, 5u));
  EXPECT_EQ(client_.pending(), 3u);
}

TEST_F(ClientTest, AnswersOutOfOrderAreMatchedByStreamId) {
  std::vector<Responder> held;
  server_.Register("svc", "Hold", [&](const CallInfo&, std::string p, Responder done) {
    held.push_back([done, p](Result<std::string>) { done("re:" + p); });
  });
  std::vector<std::string> got(3);
  for (int i = 0; i < 3; ++i) {
    client_.Call("svc", "Hold", std::to_string(i), 0ns, [&got, i](Result<std::string> r) {
      ASSERT_THAT(r, IsOk());
      got[i] = *r;
    });
  }
  Pump();
  ASSERT_EQ(held.size(), 3u);
  held[2](std::string(""));
  held[0](std::string(""));
  held[1](std::string(""));
  Pump();
  EXPECT_THAT(got, ElementsAre("re:0", "re:1", "re:2"));
  EXPECT_EQ(client_.pending(), 0u);
}

TEST_F(ClientTest, ErrorStatusArrivesWithCodeAndMessage) {
  std::optional<Result<std::string>> got;
  client_.Call("svc", "Missing", "", 0ns, [&](Result<std::string> r) { got = std::move(r); });
  Pump();
  ASSERT_TRUE(got.has_value());
  EXPECT_THAT(*got, StatusIs(StatusCode::kUnimplemented, "service svc"));
}

TEST_F(ClientTest, TimeoutFailsTheCallAndTheLateAnswerIsDropped) {
  std::vector<Responder> held;
  server_.Register("svc", "Hold", [&](const CallInfo& call, std::string, Responder done) {
    EXPECT_EQ(call.timeout_nano, 1'000'000);  // the deadline travels as timeout_nano
    held.push_back(std::move(done));
  });
  int calls = 0;
  std::optional<Result<std::string>> got;
  client_.Call("svc", "Hold", "", 1ms, [&](Result<std::string> r) {
    ++calls;
    got = std::move(r);
  });
  Pump();
  for (int i = 0; i < 10000 && !got; ++i) ASSERT_THAT(loop_->RunOnce(100ms), IsOk());
  ASSERT_TRUE(got.has_value());
  EXPECT_THAT(*got, StatusIs(StatusCode::kDeadlineExceeded));
  ASSERT_EQ(held.size(), 1u);
  held[0](std::string("late"));
  Pump();
  RunLoop();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(client_.pending(), 0u);
  EXPECT_EQ(loop_->timer_count(), 0u);
}

TEST_F(ClientTest, CloseFailsPendingAndLaterCallsOutsideCall) {
  std::vector<StatusCode> codes;
  client_.Call("svc", "A", "", 1h,
               [&](Result<std::string> r) { codes.push_back(r.status().code()); });
  client_.Call("svc", "B", "", 0ns,
               [&](Result<std::string> r) { codes.push_back(r.status().code()); });
  client_.OnClosed(UnavailableError("peer gone"));
  EXPECT_THAT(codes, ElementsAre(StatusCode::kUnavailable, StatusCode::kUnavailable));
  EXPECT_EQ(loop_->timer_count(), 0u);  // the 1 h timer is cancelled
  client_.Call("svc", "C", "", 0ns,
               [&](Result<std::string> r) { codes.push_back(r.status().code()); });
  EXPECT_EQ(codes.size(), 2u);  // not from inside Call()
  RunLoop();
  EXPECT_THAT(codes, ElementsAre(StatusCode::kUnavailable, StatusCode::kUnavailable,
                                 StatusCode::kUnavailable));
}

TEST_F(ClientTest, RequestOverFourMiBIsRefusedLocally) {
  std::optional<Result<std::string>> got;
  client_.Call("svc", "M", std::string(kMaxMessageSize, 'x'), 0ns,
               [&](Result<std::string> r) { got = std::move(r); });
  EXPECT_FALSE(got.has_value());
  RunLoop();
  ASSERT_TRUE(got.has_value());
  EXPECT_THAT(*got, StatusIs(StatusCode::kResourceExhausted));
  EXPECT_TRUE(to_server_.messages.empty());
  EXPECT_EQ(client_.pending(), 0u);
}

TEST_F(ClientTest, OversizedAnswerFailsOnlyItsCall) {
  std::optional<Result<std::string>> got;
  client_.Call("svc", "M", "", 0ns, [&](Result<std::string> r) { got = std::move(r); });
  std::string oversized(kFrameHeaderSize, '\0');
  EncodeFrameHeader(FrameHeader{kMaxMessageSize + 1, 1, 2, 0}, oversized.data());
  oversized += std::string(kMaxMessageSize + 1, 'o');
  ASSERT_THAT(client_.OnBytes(oversized), IsOk());
  ASSERT_TRUE(got.has_value());
  EXPECT_THAT(*got, StatusIs(StatusCode::kResourceExhausted));
}

TEST_F(ClientTest, AnswerForUnknownStreamIsIgnored) {
  std::string stray = *EncodeFrame(7, MessageType::kResponse, 0, EncodeResponse(Response{}));
  EXPECT_THAT(client_.OnBytes(stray), IsOk());
  EXPECT_EQ(client_.pending(), 0u);
}

}  // namespace
}  // namespace dracpu::ttrpc
