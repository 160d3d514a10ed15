#include "common/stream_buffer.h"

#include <gtest/gtest.h>

#include <string>

namespace dracpu {
namespace {

TEST(StreamBufferTest, WholeInputIsDecodedWithoutCopy) {
  StreamBuffer b;
  const std::string bytes = "abcdef";
  std::string_view v = b.Begin(bytes);
  EXPECT_EQ(v.data(), bytes.data());
  b.End(v.size());
  EXPECT_EQ(b.buffered(), 0u);
}

TEST(StreamBufferTest, TailIsKeptAndPrependedToTheNextInput) {
  StreamBuffer b;
  std::string_view v = b.Begin("abcdef");
  b.End(4);  // "ef" incomplete
  EXPECT_EQ(b.buffered(), 2u);
  v = b.Begin("gh");
  EXPECT_EQ(v, "efgh");
  b.End(1);
  EXPECT_EQ(b.buffered(), 3u);
  v = b.Begin("");
  EXPECT_EQ(v, "fgh");
  b.End(3);
  EXPECT_EQ(b.buffered(), 0u);
}

TEST(StreamBufferTest, LargeFrameInPiecesKeepsEveryByteOnce) {
  StreamBuffer b;
  std::string all;
  for (int i = 0; i < 100; ++i) {
    const std::string piece(100, static_cast<char>('a' + i % 26));
    all += piece;
    const std::string_view v = b.Begin(piece);
    EXPECT_EQ(v, all);
    b.End(0);  // nothing complete yet
  }
  EXPECT_EQ(b.buffered(), all.size());
}

TEST(StreamBufferTest, ClearDropsPendingBytes) {
  StreamBuffer b;
  b.End(b.Begin("abc").size() - 1);
  b.Clear();
  EXPECT_EQ(b.buffered(), 0u);
  EXPECT_EQ(b.Begin("xy"), "xy");
}

}  // namespace
}  // namespace dracpu
