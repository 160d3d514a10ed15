// Multiplexer over a real socketpair: one end is a Multiplexer on the loop, the other either a
// second Multiplexer or a raw fd the test reads and writes itself (to see the exact frames and
// to inject split, stray and garbage frames).
#include "nri-agent/mux/multiplexer.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::mux {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using namespace std::chrono_literals;

std::pair<UniqueFd, UniqueFd> SocketPair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

class MultiplexerTest : public ::testing::Test {
 protected:
  MultiplexerTest()
      : loop_(std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value()) {
    auto [a, b] = SocketPair();
    raw_ = std::move(b);
    auto mux = Multiplexer::Create(*loop_, std::move(a),
                                   [this](const Status& reason) { closed_ = reason; });
    EXPECT_THAT(mux, IsOk());
    mux_ = std::move(mux).value();
    mux_->Open(1, [this](std::string_view b) {
      got_.emplace_back(1, std::string(b));
      return Status::Ok();
    });
    mux_->Open(2, [this](std::string_view b) {
      got_.emplace_back(2, std::string(b));
      return Status::Ok();
    });
  }

  void RawWrite(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(raw_.get(), bytes.data(), bytes.size());
      ASSERT_GT(n, 0);
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }
  // Runs the loop until nothing more happens for a few iterations (bounded by count).
  void Settle() {
    for (int i = 0; i < 4; ++i) ASSERT_THAT(loop_->RunOnce(0ms), IsOk());
  }
  // Reads exactly n bytes from the raw end, running the loop so the mux keeps writing.
  std::string RawRead(size_t n) {
    std::string out;
    const int flags = ::fcntl(raw_.get(), F_GETFL);
    ::fcntl(raw_.get(), F_SETFL, flags | O_NONBLOCK);
    char buf[65536];
    for (int i = 0; i < 100000 && out.size() < n; ++i) {
      const ssize_t r = ::read(raw_.get(), buf, std::min(sizeof(buf), n - out.size()));
      if (r > 0) out.append(buf, static_cast<size_t>(r));
      EXPECT_THAT(loop_->RunOnce(0ms), IsOk());
    }
    ::fcntl(raw_.get(), F_SETFL, flags);
    return out;
  }
  // Joins what each connection received (payload boundaries do not matter to receivers).
  std::string Received(uint32_t conn) const {
    std::string s;
    for (const auto& [c, b] : got_) {
      if (c == conn) s += b;
    }
    return s;
  }

  std::unique_ptr<loop::EventLoop> loop_;
  UniqueFd raw_;
  std::unique_ptr<Multiplexer> mux_;
  std::vector<std::pair<uint32_t, std::string>> got_;
  std::optional<Status> closed_;
};

std::string Frames(uint32_t conn, std::string_view message) {
  std::string wire;
  EXPECT_THAT(AppendMessageFrames(conn, message, &wire), IsOk());
  return wire;
}

TEST_F(MultiplexerTest, WritesSmallMessagesAsOneFrameAndLargeOnesAsExactlyTwo) {
  const std::string big(10000, 'B');
  ASSERT_THAT(mux_->Sink(1).Send("small"), IsOk());
  ASSERT_THAT(mux_->Sink(2).Send(big), IsOk());
  const std::string wire = RawRead(8 + 5 + 8 + 4096 + 8 + (10000 - 4096));
  std::vector<std::pair<uint32_t, size_t>> frames;
  FrameDecoder decoder;
  std::string conn2;
  ASSERT_THAT(decoder.Feed(wire,
                           [&](uint32_t c, std::string_view p) {
                             frames.emplace_back(c, p.size());
                             if (c == 2) conn2 += p;
                             return Status::Ok();
                           }),
              IsOk());
  EXPECT_THAT(frames, ElementsAre(Pair(1u, 5u), Pair(2u, 4096u), Pair(2u, 10000u - 4096u)));
  EXPECT_EQ(conn2, big);
}

TEST_F(MultiplexerTest, ReadsFramesSplitAtEveryByteBoundary) {
  // The 4200-byte message travels as two frames, so cuts fall in every header and payload.
  const std::string wire =
      Frames(1, "hello") + Frames(2, std::string(4200, 'z')) + Frames(1, "bye");
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    got_.clear();
    RawWrite(std::string_view(wire).substr(0, cut));
    Settle();
    RawWrite(std::string_view(wire).substr(cut));
    Settle();
    ASSERT_EQ(Received(1), "hellobye") << "cut at " << cut;
    ASSERT_EQ(Received(2), std::string(4200, 'z')) << "cut at " << cut;
  }
  EXPECT_FALSE(closed_.has_value());
}

TEST_F(MultiplexerTest, FramesForUnopenedConnectionsAreDropped) {
  RawWrite(Frames(7, "stray") + Frames(1, "mine"));
  Settle();
  EXPECT_THAT(got_, ElementsAre(Pair(1u, "mine")));
  EXPECT_FALSE(closed_.has_value());
}

TEST_F(MultiplexerTest, OversizedFrameClosesTheTrunkCleanly) {
  char header[kFrameHeaderSize];
  EncodeFrameHeader(FrameHeader{1, kMaxPayloadSize + 1}, header);
  RawWrite(Frames(1, "before") + std::string(header, kFrameHeaderSize) + "junk");
  Settle();
  ASSERT_TRUE(closed_.has_value());
  EXPECT_THAT(*closed_, StatusIs(StatusCode::kDataLoss));
  EXPECT_THAT(got_, ElementsAre(Pair(1u, "before")));
  EXPECT_TRUE(mux_->closed());
  EXPECT_THAT(mux_->Sink(1).Send("x"), StatusIs(StatusCode::kUnavailable));
  EXPECT_EQ(loop_->watch_count(), 0u);
}

TEST_F(MultiplexerTest, AcceptsTheLargestFrame) {
  const std::string payload(kMaxPayloadSize, 'L');
  std::string wire(kFrameHeaderSize, '\0');
  EncodeFrameHeader(FrameHeader{2, kMaxPayloadSize}, wire.data());
  wire += payload;
  // Written piecewise while the loop reads: the socket buffer is smaller than the frame.
  const int flags = ::fcntl(raw_.get(), F_GETFL);
  ::fcntl(raw_.get(), F_SETFL, flags | O_NONBLOCK);
  size_t off = 0;
  for (int i = 0; i < 1000000 && off < wire.size(); ++i) {
    const ssize_t n = ::write(raw_.get(), wire.data() + off, wire.size() - off);
    if (n > 0) off += static_cast<size_t>(n);
    ASSERT_THAT(loop_->RunOnce(0ms), IsOk());
  }
  Settle();
  EXPECT_EQ(Received(2), payload);
  EXPECT_FALSE(closed_.has_value());
}

TEST_F(MultiplexerTest, PeerCloseIsUnavailable) {
  raw_.Reset();
  Settle();
  ASSERT_TRUE(closed_.has_value());
  EXPECT_THAT(*closed_, StatusIs(StatusCode::kUnavailable));
}

TEST_F(MultiplexerTest, ReceiverErrorClosesTheTrunkAndStopsDelivery) {
  mux_->Open(1, [this](std::string_view b) {
    got_.emplace_back(1, std::string(b));
    return InvalidArgumentError("bad bytes");
  });
  RawWrite(Frames(1, "a") + Frames(2, "b"));
  Settle();
  EXPECT_THAT(got_, ElementsAre(Pair(1u, "a")));
  ASSERT_TRUE(closed_.has_value());
  EXPECT_THAT(*closed_, StatusIs(StatusCode::kInvalidArgument, "bad bytes"));
}

TEST_F(MultiplexerTest, SendNeverBlocksAndTheBacklogDrains) {
  // 16 messages of ~1 MiB while nobody reads the raw end: more than any socket buffer.
  const std::string message(1 << 20, 'q');
  for (int i = 0; i < 16; ++i) ASSERT_THAT(mux_->Sink(1).Send(message), IsOk());
  EXPECT_GT(mux_->pending_write_bytes(), 0u);
  const size_t total = 16 * (message.size() + 2 * kFrameHeaderSize);
  const std::string wire = RawRead(total);
  ASSERT_EQ(wire.size(), total);
  EXPECT_EQ(mux_->pending_write_bytes(), 0u);
  size_t frames = 0;
  FrameDecoder decoder;
  ASSERT_THAT(decoder.Feed(wire,
                           [&](uint32_t, std::string_view) {
                             ++frames;
                             return Status::Ok();
                           }),
              IsOk());
  EXPECT_EQ(frames, 32u);
}

// A peer that never reads: the queue stops at kMaxPendingWriteBytes, that Send fails, and the
// trunk closes with the reason on the next loop turn (the agent then reconnects).
TEST_F(MultiplexerTest, PeerThatNeverReadsClosesTheTrunkInsteadOfGrowingTheQueue) {
  const std::string message(1 << 20, 'q');
  Status last;
  int sent = 0;
  while (sent < 100) {
    last = mux_->Sink(1).Send(message);
    if (!last.ok()) break;
    ++sent;
  }
  EXPECT_THAT(last, StatusIs(StatusCode::kResourceExhausted, HasSubstr("has not read")));
  EXPECT_GE(sent, 60);
  EXPECT_LE(mux_->pending_write_bytes(), kMaxPendingWriteBytes);
  Settle();
  ASSERT_TRUE(closed_.has_value());
  EXPECT_THAT(*closed_, StatusIs(StatusCode::kResourceExhausted));
  EXPECT_THAT(mux_->Sink(1).Send("x"), StatusIs(StatusCode::kUnavailable));
}

TEST_F(MultiplexerTest, ConnectionZeroIsReserved) {
  EXPECT_THAT(mux_->Sink(0).Send("x"), StatusIs(StatusCode::kInvalidArgument));
}

TEST_F(MultiplexerTest, TwoMultiplexersTalkBothWays) {
  auto [a, b] = SocketPair();
  std::string at_a, at_b;
  auto mux_a = Multiplexer::Create(*loop_, std::move(a), nullptr);
  auto mux_b = Multiplexer::Create(*loop_, std::move(b), nullptr);
  ASSERT_THAT(mux_a, IsOk());
  ASSERT_THAT(mux_b, IsOk());
  (*mux_a)->Open(2, [&](std::string_view s) {
    at_a += s;
    return Status::Ok();
  });
  (*mux_b)->Open(1, [&](std::string_view s) {
    at_b += s;
    return Status::Ok();
  });
  ASSERT_THAT((*mux_a)->Sink(1).Send("to b"), IsOk());
  ASSERT_THAT((*mux_b)->Sink(2).Send("to a"), IsOk());
  Settle();
  EXPECT_EQ(at_a, "to a");
  EXPECT_EQ(at_b, "to b");
}

}  // namespace
}  // namespace dracpu::mux
