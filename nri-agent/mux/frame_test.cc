#include "nri-agent/mux/frame.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace dracpu::mux {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

TEST(MuxFrame, HeaderCodecTable) {
  const std::pair<FrameHeader, std::string> cases[] = {
      {{1, 0}, Bytes({0, 0, 0, 1, 0, 0, 0, 0})},
      {{2, 4096}, Bytes({0, 0, 0, 2, 0, 0, 0x10, 0})},
      {{0x01020304, kMaxPayloadSize}, Bytes({1, 2, 3, 4, 0, 0x40, 0, 0x0a})},
  };
  for (const auto& [header, wire] : cases) {
    char out[kFrameHeaderSize];
    EncodeFrameHeader(header, out);
    EXPECT_EQ(std::string(out, kFrameHeaderSize), wire);
    EXPECT_EQ(DecodeFrameHeader(wire.data()), header);
  }
}

// Decodes a whole byte string into (conn, payload size) pairs.
std::vector<std::pair<uint32_t, size_t>> FrameSizes(const std::string& wire) {
  std::vector<std::pair<uint32_t, size_t>> out;
  FrameDecoder decoder;
  EXPECT_THAT(decoder.Feed(wire,
                           [&](uint32_t conn, std::string_view p) {
                             out.emplace_back(conn, p.size());
                             return Status::Ok();
                           }),
              IsOk());
  EXPECT_EQ(decoder.buffered(), 0u);
  return out;
}

TEST(MuxFrame, WriteSplitForTheGoReaderTable) {
  using Sizes = std::vector<std::pair<uint32_t, size_t>>;
  const std::pair<size_t, Sizes> cases[] = {
      {0, {{1, 0}}},
      {10, {{1, 10}}},
      {4096, {{1, 4096}}},
      {4097, {{1, 4096}, {1, 1}}},
      {100000, {{1, 4096}, {1, 100000 - 4096}}},
      {kMaxPayloadSize, {{1, 4096}, {1, kMaxPayloadSize - 4096}}},
  };
  for (const auto& [size, want] : cases) {
    SCOPED_TRACE(size);
    std::string message(size, 'm');
    std::string wire;
    ASSERT_THAT(AppendMessageFrames(1, message, &wire), IsOk());
    EXPECT_EQ(FrameSizes(wire), want);
    EXPECT_EQ(wire.size(), size + kFrameHeaderSize * want.size());
  }
  std::string wire;
  EXPECT_THAT(AppendMessageFrames(1, std::string(kMaxPayloadSize + 1, 'm'), &wire),
              StatusIs(StatusCode::kInvalidArgument));
  EXPECT_TRUE(wire.empty());
}

TEST(MuxFrame, DecoderSplitAtEveryByteBoundaryWithInterleavedConnections) {
  std::string wire;
  ASSERT_THAT(AppendMessageFrames(1, "first", &wire), IsOk());
  ASSERT_THAT(AppendMessageFrames(2, "", &wire), IsOk());
  ASSERT_THAT(AppendMessageFrames(2, std::string(5000, 'x'), &wire), IsOk());
  ASSERT_THAT(AppendMessageFrames(1, "last", &wire), IsOk());
  const std::vector<std::pair<uint32_t, std::string>> want = {
      {1, "first"}, {2, ""}, {2, std::string(4096, 'x')}, {2, std::string(904, 'x')}, {1, "last"}};
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    std::vector<std::pair<uint32_t, std::string>> got;
    FrameDecoder decoder;
    auto handler = [&](uint32_t conn, std::string_view p) {
      got.emplace_back(conn, std::string(p));
      return Status::Ok();
    };
    ASSERT_THAT(decoder.Feed(std::string_view(wire).substr(0, cut), handler), IsOk());
    ASSERT_THAT(decoder.Feed(std::string_view(wire).substr(cut), handler), IsOk());
    ASSERT_EQ(got, want) << "cut at " << cut;
  }
}

TEST(MuxFrame, OversizedFrameIsDataLossAndFinal) {
  std::string wire;
  ASSERT_THAT(AppendMessageFrames(1, "ok", &wire), IsOk());
  char header[kFrameHeaderSize];
  EncodeFrameHeader(FrameHeader{1, kMaxPayloadSize + 1}, header);
  wire.append(header, kFrameHeaderSize);
  int delivered = 0;
  FrameDecoder decoder;
  auto handler = [&](uint32_t, std::string_view) {
    ++delivered;
    return Status::Ok();
  };
  EXPECT_THAT(decoder.Feed(wire, handler), StatusIs(StatusCode::kDataLoss));
  EXPECT_EQ(delivered, 1);
  std::string more;
  ASSERT_THAT(AppendMessageFrames(1, "later", &more), IsOk());
  EXPECT_THAT(decoder.Feed(more, handler), StatusIs(StatusCode::kDataLoss));
  EXPECT_EQ(delivered, 1);
}

TEST(MuxFrame, HandlerErrorStopsDecoding) {
  std::string wire;
  ASSERT_THAT(AppendMessageFrames(1, "a", &wire), IsOk());
  ASSERT_THAT(AppendMessageFrames(1, "b", &wire), IsOk());
  int delivered = 0;
  FrameDecoder decoder;
  EXPECT_THAT(decoder.Feed(wire,
                           [&](uint32_t, std::string_view) {
                             ++delivered;
                             return InternalError("stop");
                           }),
              StatusIs(StatusCode::kInternal));
  EXPECT_EQ(delivered, 1);
}

}  // namespace
}  // namespace dracpu::mux
