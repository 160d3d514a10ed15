#include "nri-agent/ttrpc/frame.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace dracpu::ttrpc {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

struct HeaderCase {
  FrameHeader header;
  std::string wire;
};

TEST(TtrpcFrame, HeaderCodecTable) {
  const HeaderCase cases[] = {
      {{0, 1, 1, 0}, Bytes({0, 0, 0, 0, 0, 0, 0, 1, 1, 0})},
      {{5, 3, 2, 0}, Bytes({0, 0, 0, 5, 0, 0, 0, 3, 2, 0})},
      {{kMaxMessageSize, 0x01020304, 3, 0x05}, Bytes({0, 0x40, 0, 0, 1, 2, 3, 4, 3, 5})},
      {{0xFFFFFFFF, 0xFFFFFFFF, 0xFF, 0xFF},
       Bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})},
  };
  for (const HeaderCase& c : cases) {
    char out[kFrameHeaderSize];
    EncodeFrameHeader(c.header, out);
    EXPECT_EQ(std::string(out, kFrameHeaderSize), c.wire);
    EXPECT_EQ(DecodeFrameHeader(c.wire.data()), c.header);
  }
}

TEST(TtrpcFrame, EncodeFrameRefusesOverFourMiB) {
  EXPECT_THAT(EncodeFrame(1, MessageType::kRequest, 0, std::string(kMaxMessageSize, 'x')), IsOk());
  EXPECT_THAT(EncodeFrame(1, MessageType::kRequest, 0, std::string(kMaxMessageSize + 1, 'x')),
              StatusIs(StatusCode::kResourceExhausted));
}

std::string Frame3() {
  std::string s;
  s += *EncodeFrame(1, MessageType::kRequest, 0, "abc");
  s += *EncodeFrame(3, MessageType::kRequest, 0, "");
  s += *EncodeFrame(2, MessageType::kResponse, 0, std::string(300, 'z'));
  return s;
}

void ExpectFrame3(const std::vector<Frame>& frames) {
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].header, (FrameHeader{3, 1, 1, 0}));
  EXPECT_EQ(frames[0].data, "abc");
  EXPECT_EQ(frames[1].header, (FrameHeader{0, 3, 1, 0}));
  EXPECT_EQ(frames[1].data, "");
  EXPECT_EQ(frames[2].data, std::string(300, 'z'));
  for (const Frame& f : frames) EXPECT_FALSE(f.oversized);
}

TEST(TtrpcFrame, DecoderSplitAtEveryByteBoundary) {
  const std::string stream = Frame3();
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SCOPED_TRACE(cut);
    FrameDecoder decoder;
    std::vector<Frame> frames;
    ASSERT_THAT(decoder.Feed(std::string_view(stream).substr(0, cut), &frames), IsOk());
    ASSERT_THAT(decoder.Feed(std::string_view(stream).substr(cut), &frames), IsOk());
    ExpectFrame3(frames);
    EXPECT_EQ(decoder.buffered(), 0u);
  }
}

TEST(TtrpcFrame, DecoderByteByByte) {
  const std::string stream = Frame3();
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (char c : stream) ASSERT_THAT(decoder.Feed(std::string_view(&c, 1), &frames), IsOk());
  ExpectFrame3(frames);
}

TEST(TtrpcFrame, OversizedFrameIsReportedSkippedAndTheStreamContinues) {
  const uint32_t length = kMaxMessageSize + 7;
  std::string stream(kFrameHeaderSize, '\0');
  EncodeFrameHeader(FrameHeader{length, 5, 1, 0}, stream.data());
  stream += std::string(length, 'g');
  stream += *EncodeFrame(7, MessageType::kRequest, 0, "ok");
  // Cuts inside the header, at the data start, in the middle, one short of its end, at the next
  // frame: the skip must account exactly for the announced length every time.
  const size_t cuts[] = {3,
                         kFrameHeaderSize,
                         1000,
                         kFrameHeaderSize + length - 1,
                         kFrameHeaderSize + length,
                         stream.size() - 1};
  for (size_t cut : cuts) {
    SCOPED_TRACE(cut);
    FrameDecoder decoder;
    std::vector<Frame> frames;
    ASSERT_THAT(decoder.Feed(std::string_view(stream).substr(0, cut), &frames), IsOk());
    ASSERT_THAT(decoder.Feed(std::string_view(stream).substr(cut), &frames), IsOk());
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_TRUE(frames[0].oversized);
    EXPECT_EQ(frames[0].header.stream_id, 5u);
    EXPECT_EQ(frames[0].header.length, length);
    EXPECT_TRUE(frames[0].data.empty());
    EXPECT_FALSE(frames[1].oversized);
    EXPECT_EQ(frames[1].data, "ok");
    EXPECT_EQ(decoder.buffered(), 0u);
  }
}

TEST(TtrpcFrame, ReservedTopByteIsGarbageAndPoisonsTheDecoder) {
  std::string stream = *EncodeFrame(1, MessageType::kRequest, 0, "a");
  stream += Bytes({0x01, 0, 0, 0, 0, 0, 0, 3, 1, 0});  // 16 MiB
  FrameDecoder decoder;
  std::vector<Frame> frames;
  EXPECT_THAT(decoder.Feed(stream, &frames), StatusIs(StatusCode::kDataLoss));
  ASSERT_EQ(frames.size(), 1u);  // the good frame before it still counts
  EXPECT_THAT(decoder.Feed(*EncodeFrame(3, MessageType::kRequest, 0, "b"), &frames),
              StatusIs(StatusCode::kDataLoss));
  EXPECT_EQ(frames.size(), 1u);
}

}  // namespace
}  // namespace dracpu::ttrpc
