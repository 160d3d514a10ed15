// Seeded garbage against every decoder and against a live peer: whatever arrives, the result is
// a clean error or a dropped frame, never a crash, a hang or a read out of bounds (run under
// `make asan` for the last). Seeds are fixed so a failure reproduces; the libFuzzer targets of
// tests/fuzz/ are the open-ended version of this.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nri-agent/mux/frame.h"
#include "nri-agent/mux/ttrpc_peer.h"
#include "nri-agent/ttrpc/envelope.h"
#include "nri-agent/ttrpc/frame.h"
#include "tests/testing/real_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::mux {
namespace {

using namespace std::chrono_literals;

std::string RandomBytes(std::mt19937& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s(len(rng), '\0');
  for (char& c : s) c = static_cast<char>(byte(rng));
  return s;
}

// Mostly-valid streams are more interesting than pure noise: valid headers with random bodies,
// random lengths around the limits, and plain noise, concatenated.
std::string RandomStream(std::mt19937& rng) {
  std::string s;
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<int> pieces(1, 8);
  for (int i = pieces(rng); i > 0; --i) {
    switch (kind(rng)) {
      case 0:
        s += RandomBytes(rng, 64);
        break;
      case 1: {  // a plausible ttrpc frame with a random body
        const std::string body = RandomBytes(rng, 64);
        char h[ttrpc::kFrameHeaderSize];
        ttrpc::EncodeFrameHeader(
            ttrpc::FrameHeader{static_cast<uint32_t>(body.size()), static_cast<uint32_t>(rng() % 8),
                               static_cast<uint8_t>(rng() % 4), static_cast<uint8_t>(rng() % 4)},
            h);
        s.append(h, sizeof(h));
        s += body;
        break;
      }
      case 2: {  // a header whose length is near or over a limit
        const uint32_t lengths[] = {ttrpc::kMaxMessageSize,
                                    ttrpc::kMaxMessageSize + 1,
                                    kMaxPayloadSize,
                                    kMaxPayloadSize + 1,
                                    0xFFFFFFFFu,
                                    1u << 24};
        char h[ttrpc::kFrameHeaderSize];
        ttrpc::EncodeFrameHeader(
            ttrpc::FrameHeader{lengths[rng() % 6], static_cast<uint32_t>(rng()), 1, 0}, h);
        s.append(h, sizeof(h));
        break;
      }
      default: {  // a valid request envelope for a random method
        ttrpc::Request r;
        r.service = "svc";
        r.method = RandomBytes(rng, 4);
        r.payload = RandomBytes(rng, 16);
        s += *ttrpc::EncodeFrame(static_cast<uint32_t>(rng() % 16), ttrpc::MessageType::kRequest, 0,
                                 ttrpc::EncodeRequest(r));
      }
    }
  }
  return s;
}

TEST(Garbage, DecodersNeverCrashAndOnlyFailWithDataLoss) {
  std::mt19937 rng(20261129);
  for (int round = 0; round < 3000; ++round) {
    const std::string stream = RandomStream(rng);
    // Fed in random pieces.
    ttrpc::FrameDecoder ttrpc_decoder;
    FrameDecoder mux_decoder;
    std::vector<ttrpc::Frame> frames;
    size_t off = 0;
    while (off < stream.size()) {
      const size_t n = std::min<size_t>(stream.size() - off, 1 + rng() % 40);
      const std::string_view piece = std::string_view(stream).substr(off, n);
      off += n;
      Status t = ttrpc_decoder.Feed(piece, &frames);
      if (!t.ok()) {
        ASSERT_THAT(t, StatusIs(StatusCode::kDataLoss));
      }
      Status m = mux_decoder.Feed(piece, [](uint32_t, std::string_view) { return Status::Ok(); });
      if (!m.ok()) {
        ASSERT_THAT(m, StatusIs(StatusCode::kDataLoss));
      }
    }
    for (const ttrpc::Frame& f : frames) {
      ASSERT_LE(f.data.size(), ttrpc::kMaxMessageSize);
      // Envelope decoders on whatever the frames carried: a value or a clean error.
      (void)ttrpc::DecodeRequest(f.data).ok();
      (void)ttrpc::DecodeResponse(f.data).ok();
    }
  }
}

TEST(Garbage, LivePeerClosesCleanlyOrKeepsServing) {
  std::mt19937 rng(7);
  auto loop = std::move(loop::EventLoop::Create(dracpu::testing::RealClock())).value();
  int closed_count = 0;
  for (int round = 0; round < 200; ++round) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    UniqueFd raw(sv[1]);
    std::optional<Status> closed;
    auto peer = TtrpcPeer::ForPlugin(*loop, UniqueFd(sv[0]), [&](const Status& s) { closed = s; });
    ASSERT_THAT(peer, IsOk());
    int handled = 0;
    (*peer)->server().Register("svc", "Echo",
                               [&](const ttrpc::CallInfo&, std::string p, ttrpc::Responder done) {
                                 ++handled;
                                 done(std::move(p));
                               });
    // Random ttrpc streams inside well-formed mux frames on conns 0..3, or raw noise.
    std::string wire;
    for (int i = 0; i < 4; ++i) {
      const std::string s = RandomStream(rng);
      if (rng() % 5 == 0) {
        wire += s;
      } else {
        ASSERT_THAT(AppendMessageFrames(static_cast<uint32_t>(rng() % 4), s, &wire), IsOk());
      }
    }
    ::fcntl(raw.get(), F_SETFL, ::fcntl(raw.get(), F_GETFL) | O_NONBLOCK);
    [[maybe_unused]] ssize_t n = ::write(raw.get(), wire.data(), wire.size());
    char buf[65536];
    for (int i = 0; i < 20 && !closed; ++i) {
      ASSERT_THAT(loop->RunOnce(0ms), IsOk());
      while (::read(raw.get(), buf, sizeof(buf)) > 0) {
      }
    }
    if (closed) {
      ++closed_count;
      EXPECT_FALSE(closed->ok());
      EXPECT_TRUE((*peer)->closed());
    }
    // The peer stays usable as an object either way; destroying it must be clean too.
    peer->reset();
  }
  EXPECT_EQ(loop->watch_count(), 0u);
  // With a 1 in 5 chance of raw noise per piece, some rounds must have closed the trunk.
  EXPECT_GT(closed_count, 0);
}

}  // namespace
}  // namespace dracpu::mux
