#include "common/sysfs_attribute.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using namespace std::string_literals;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseSysfsInt, AcceptsKernelSpellingsAndDumpPadding) {
  const struct {
    std::string text;
    int value;
  } kCases[] = {
      {"0\n", 0}, {"36\n", 36},        {"-1\n", -1}, {"65535\n", 65535},
      {"7", 7},   {"8442\n\0"s, 8442}, {"3\n\n", 3}, {"2147483647\n", 2147483647},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(ParseSysfsInt(c.text, "f"), IsOkAndHolds(c.value)) << c.text;
  }
}

TEST(ParseSysfsInt, RejectsMalformedFilesNamingThem) {
  const struct {
    std::string text;
    const char* why;
  } kCases[] = {
      {"", "empty file"},
      {"\n", "empty file"},
      {"\0"s, "empty file"},
      {"abc\n", "not an integer"},
      {"+3\n", "not an integer"},
      {" 3\n", "not an integer"},
      {"3 \n", "junk after the integer"},
      {"3\n4\n", "junk after the integer"},
      {"3\0x"s, "junk after the integer"},
      {"0x10\n", "junk after the integer"},
      {"99999999999999999999\n", "out of range"},
      {"\xff\xfe\n", "not an integer"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(ParseSysfsInt(c.text, "/sys/x/physical_package_id"),
                StatusIs(StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("/sys/x/physical_package_id"), HasSubstr(c.why))))
        << c.why;
  }
}

TEST(ParseSysfsIntRow, Distances) {
  EXPECT_THAT(ParseSysfsIntRow("10 21 21\n", "d"), IsOkAndHolds(ElementsAre(10, 21, 21)));
  EXPECT_THAT(ParseSysfsIntRow("10", "d"), IsOkAndHolds(ElementsAre(10)));
  for (const std::string& bad : {""s, "\n"s, "10  21\n"s, " 10\n"s, "10 \n"s, "10,21\n"s,
                                 "10 -1\n"s, "10 x\n"s, "10\t21\n"s}) {
    EXPECT_THAT(ParseSysfsIntRow(bad, "node0/distance"),
                StatusIs(StatusCode::kInvalidArgument, HasSubstr("node0/distance")))
        << bad;
  }
}

TEST(ParseSysfsWord, SmtControl) {
  EXPECT_THAT(ParseSysfsWord("on\n", "c"), IsOkAndHolds(std::string("on")));
  EXPECT_THAT(ParseSysfsWord("notimplemented", "c"), IsOkAndHolds(std::string("notimplemented")));
  for (const std::string& bad : {""s, "\n"s, "o n\n"s, "on\x01\n"s, "\xc3\xa9\n"s}) {
    EXPECT_THAT(ParseSysfsWord(bad, "smt/control"),
                StatusIs(StatusCode::kInvalidArgument, HasSubstr("smt/control")));
  }
}

TEST(ParseSysfsCpuSets, ListsAndMasksWithPadding) {
  EXPECT_THAT(ParseSysfsCpuList("0-3,8\n\0"s, "l"), IsOkAndHolds(CpuSet({0, 1, 2, 3, 8})));
  EXPECT_THAT(ParseSysfsCpuList("\n", "l"), IsOkAndHolds(CpuSet()));
  EXPECT_THAT(ParseSysfsCpuMask("0000,000000ff\n\n", "m"), IsOkAndHolds(CpuSet::Range(0, 7)));
  const struct {
    std::string text;
    bool mask;
  } kBad[] = {
      {"0-3\0,5"s, false}, {"1,,2\n", false}, {"3-1\n", false},
      {"x\n", false},      {"8192\n", false}, {"", true},
      {"fg\n", true},      {"1,\n", true},    {"123456789\n", true},
  };
  for (const auto& c : kBad) {
    auto result = c.mask ? ParseSysfsCpuMask(c.text, "/sys/cpumap")
                         : ParseSysfsCpuList(c.text, "/sys/cpulist");
    EXPECT_THAT(result, StatusIs(StatusCode::kInvalidArgument, HasSubstr("/sys/cpu"))) << c.text;
  }
}

TEST(TrimSysfsPadding, OnlyTrailingNewlinesAndNuls) {
  EXPECT_EQ(TrimSysfsPadding("a\n\0\n"s), "a");
  EXPECT_EQ(TrimSysfsPadding("\0a\n"s), "\0a"s);
  EXPECT_EQ(TrimSysfsPadding(""), "");
}

}  // namespace
}  // namespace dracpu
