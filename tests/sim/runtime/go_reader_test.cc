// GoTtrpcReader against the framings of protocols.md §2.2: what Go accepts, what fails with
// ENOMEM, and that every message our Multiplexer writes is accepted.
#include "tests/sim/runtime/go_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "nri-agent/mux/frame.h"
#include "nri-agent/ttrpc/frame.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::sim {
namespace {

std::string Message(size_t data_size, uint32_t stream) {
  return *ttrpc::EncodeFrame(stream, ttrpc::MessageType::kRequest, 0, std::string(data_size, 'd'));
}

// Feeds `wire` (mux frames) through the reader; returns the messages or the error.
Result<std::vector<std::string>> ReadAll(const std::string& wire) {
  std::vector<std::string> messages;
  GoTtrpcReader reader;
  mux::FrameDecoder decoder;
  Status s = decoder.Feed(wire, [&](uint32_t, std::string_view payload) {
    return reader.PushFrame(payload, &messages);
  });
  if (!s.ok()) return s;
  return messages;
}

TEST(GoReader, AcceptsEveryMessageOurMultiplexerWrites) {
  // Sizes around every boundary the reader has, and a long mixed stream.
  const size_t sizes[] = {
      0, 1, 4086, 4087, 4095, 4096, 4097, 8182, 8192, 100000, ttrpc::kMaxMessageSize};
  std::string wire;
  std::vector<std::string> sent;
  uint32_t stream = 1;
  for (size_t size : sizes) {
    sent.push_back(Message(size, stream));
    stream += 2;
    ASSERT_THAT(mux::AppendMessageFrames(1, sent.back(), &wire), IsOk());
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 200; ++i) {
    sent.push_back(Message(rng() % 20000, stream));
    stream += 2;
    ASSERT_THAT(mux::AppendMessageFrames(1, sent.back(), &wire), IsOk());
  }
  auto got = ReadAll(wire);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, sent);
}

struct FramingCase {
  const char* name;
  std::vector<std::string> frames;  // payloads, in order
  bool accepted;
};

TEST(GoReader, FramingsTable) {
  const std::string m1 = Message(3000, 1);  // 3010 bytes
  const std::string m2 = Message(6000, 3);  // 6010 bytes
  const std::string m3 = Message(20, 5);
  const FramingCase cases[] = {
      {"small message, one frame", {m1}, true},
      {"two small messages in one frame", {m1 + m3}, true},
      {"small messages cut anywhere in frames <= 4096", {m1.substr(0, 7), m1.substr(7) + m3}, true},
      {"large message as 4096 + rest", {m2.substr(0, 4096), m2.substr(4096)}, true},
      {"large message in many small frames",
       {m2.substr(0, 100), m2.substr(100, 4000), m2.substr(4100)},
       true},
      {"large message in one frame", {m2}, false},
      {"end of one message and start of the next over 4096",
       {m2.substr(0, 4096), m2.substr(4096) + m1},
       false},
  };
  for (const FramingCase& c : cases) {
    std::string wire;
    for (const std::string& f : c.frames) {
      char h[mux::kFrameHeaderSize];
      mux::EncodeFrameHeader(mux::FrameHeader{1, static_cast<uint32_t>(f.size())}, h);
      wire.append(h, sizeof(h));
      wire += f;
    }
    auto got = ReadAll(wire);
    EXPECT_EQ(got.ok(), c.accepted) << c.name << ": " << got.status().ToString();
    if (!c.accepted) {
      EXPECT_THAT(got, StatusIs(StatusCode::kResourceExhausted, ::testing::HasSubstr("ENOMEM")))
          << c.name;
    }
  }
}

}  // namespace
}  // namespace dracpu::sim
