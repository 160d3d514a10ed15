#include "common/log_escape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace dracpu {
namespace {

struct EscapeCase {
  std::string in;
  size_t max;
  std::string out;
};

TEST(LogEscape, Table) {
  const EscapeCase kCases[] = {
      {"default/claim-1", 256, "default/claim-1"},
      {"", 256, ""},
      {"a\nb", 256, "a\\x0ab"},
      {"\x1b[31mred", 256, "\\x1b[31mred"},
      {"back\\slash", 256, "back\\\\slash"},
      {"caf\xc3\xa9", 256, "caf\\xc3\\xa9"},
      {std::string("nul\0x", 5), 256, "nul\\x00x"},
      {"abcdefgh", 4, "abcd...(8 bytes)"},
      {"\x7f", 256, "\\x7f"},
      {"say \"hi\"", 256, "say \\x22hi\\x22"},
  };
  for (const EscapeCase& c : kCases) {
    EXPECT_EQ(LogEscape(c.in, c.max), c.out) << c.in;
    EXPECT_TRUE(IsLogSafe(LogEscape(c.in, c.max))) << c.in;
  }
}

TEST(LogEscape, QuoteWrapsTheEscapedText) {
  EXPECT_EQ(LogQuote("a\"b\n"), "\"a\\x22b\\x0a\"");
  EXPECT_EQ(LogQuote("0123456789", 3), "\"012...(10 bytes)\"");
}

TEST(LogEscape, SafeTextIsUnchangedAndUnsafeTextIsNot) {
  EXPECT_TRUE(IsLogSafe("claim ns/name (uid 0b1e4a52-7c1d)"));
  EXPECT_FALSE(IsLogSafe("line\nforged"));
  EXPECT_FALSE(IsLogSafe("\xff"));
  const std::string huge(1 << 20, 'x');
  EXPECT_EQ(LogEscape(huge).size(), 256 + std::string("...(1048576 bytes)").size());
}

}  // namespace
}  // namespace dracpu
