#include "common/cpu_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct ListCase {
  std::string text;
  std::string canonical;
};

class CpuListRoundTrip : public ::testing::TestWithParam<ListCase> {};

TEST_P(CpuListRoundTrip, ParsesAndPrintsCanonically) {
  Result<CpuSet> set = CpuSet::ParseList(GetParam().text);
  ASSERT_THAT(set, IsOk());
  EXPECT_EQ(set->ToListString(), GetParam().canonical);
}

INSTANTIATE_TEST_SUITE_P(Lists, CpuListRoundTrip,
                         ::testing::Values(ListCase{"", ""}, ListCase{"\n", ""}, ListCase{"0", "0"},
                                           ListCase{"0-3,8,10-11", "0-3,8,10-11"},
                                           ListCase{"0-3,8,10-11\n", "0-3,8,10-11"},
                                           ListCase{"3,2,1,0", "0-3"}, ListCase{"0,1", "0-1"},
                                           ListCase{"5-5", "5"}, ListCase{"0-2,1-4", "0-4"},
                                           ListCase{"63-64", "63-64"}, ListCase{"8191", "8191"},
                                           ListCase{"0-8191", "0-8191"}, ListCase{"007", "7"},
                                           ListCase{"1,3,5,7", "1,3,5,7"}));

struct BadCase {
  std::string text;
  std::string reason;
};

class CpuListRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(CpuListRejects, NamesTheProblem) {
  EXPECT_THAT(CpuSet::ParseList(GetParam().text, "node0/cpulist"),
              StatusIs(StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("node0/cpulist"), HasSubstr(GetParam().reason))));
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, CpuListRejects,
    ::testing::Values(
        BadCase{",", "empty item at offset 0"}, BadCase{"1,,2", "empty item at offset 2"},
        BadCase{"1,", "empty item at offset 2"}, BadCase{"3-1", "reversed range 3-1"},
        BadCase{"-1", "sign not allowed"}, BadCase{"+1", "sign not allowed"},
        BadCase{"1-+2", "sign not allowed"}, BadCase{"8192", "out of range"},
        BadCase{"99999999999999999999999", "out of range"}, BadCase{"1-", "missing CPU id"},
        BadCase{"a", "expected a CPU id"}, BadCase{"1 ,2", "unexpected character"},
        BadCase{" 1", "expected a CPU id"}, BadCase{"1\n\n", "unexpected character"},
        BadCase{"1-2-3", "unexpected character"}, BadCase{"0x1", "unexpected character"},
        BadCase{"1:2", "unexpected character"}));

TEST(CpuSetMask, ParsesKernelMasks) {
  EXPECT_THAT(CpuSet::ParseMask("00000000,0000ff01\n"),
              IsOkAndHolds(CpuSet::ParseList("0,8-15").value()));
  EXPECT_THAT(CpuSet::ParseMask("ff"), IsOkAndHolds(CpuSet::Range(0, 7)));
  EXPECT_THAT(CpuSet::ParseMask("00000001,00000000,00000000"), IsOkAndHolds(CpuSet{64}));
  EXPECT_THAT(CpuSet::ParseMask("00000000"), IsOkAndHolds(CpuSet()));
  EXPECT_THAT(CpuSet::ParseMask("FFFFFFFF"), IsOkAndHolds(CpuSet::Range(0, 31)));
}

TEST(CpuSetMask, RejectsMalformedMasks) {
  EXPECT_THAT(CpuSet::ParseMask(""),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("empty mask")));
  EXPECT_THAT(CpuSet::ParseMask("ff,,ff"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("empty word at offset 3")));
  EXPECT_THAT(CpuSet::ParseMask("ff,"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("empty word")));
  EXPECT_THAT(CpuSet::ParseMask("123456789"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("longer than 8")));
  EXPECT_THAT(CpuSet::ParseMask("0000zz00"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a hex digit at offset 4")));
  EXPECT_THAT(CpuSet::ParseMask("-1"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a hex digit")));
  // 257 words: bit 8192 is one past the capacity.
  std::string too_big = "00000001";
  for (int i = 0; i < 256; ++i) too_big += ",00000000";
  EXPECT_THAT(CpuSet::ParseMask(too_big),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("beyond the maximum")));
  // Leading zero words beyond capacity are harmless.
  std::string zero_padded = "00000000";
  for (int i = 0; i < 256; ++i) zero_padded += ",00000000";
  EXPECT_THAT(CpuSet::ParseMask(zero_padded), IsOkAndHolds(CpuSet()));
}

TEST(CpuSetMask, PrintsKernelFormat) {
  EXPECT_EQ(CpuSet().ToMaskString(), "00000000");
  EXPECT_EQ(CpuSet::ParseList("0,8-15")->ToMaskString(2), "00000000,0000ff01");
  EXPECT_EQ(CpuSet{32}.ToMaskString(), "00000001,00000000");
  EXPECT_EQ(CpuSet{8191}.ToMaskString().size(), 256u * 9 - 1);
  const CpuSet odd = CpuSet::ParseList("1,5,33-40,63,64,100,4095,8191").value();
  EXPECT_THAT(CpuSet::ParseMask(odd.ToMaskString()), IsOkAndHolds(odd));
}

TEST(CpuSet, AlgebraAndCounting) {
  const CpuSet a = CpuSet::ParseList("0-7,64-71").value();
  const CpuSet b = CpuSet::ParseList("4-11,70").value();
  EXPECT_EQ((a | b).ToListString(), "0-11,64-71");
  EXPECT_EQ((a & b).ToListString(), "4-7,70");
  EXPECT_EQ((a - b).ToListString(), "0-3,64-69,71");
  EXPECT_EQ((a ^ b).ToListString(), "0-3,8-11,64-69,71");
  EXPECT_EQ(a.Count(), 16);
  EXPECT_EQ(a.CountIntersection(b), 5);
  EXPECT_TRUE(a.Intersects(b));
  EXPECT_FALSE(a.Intersects(CpuSet{100}));
  EXPECT_TRUE(CpuSet({1, 2}).IsSubsetOf(a));
  EXPECT_FALSE(b.IsSubsetOf(a));
  EXPECT_TRUE(CpuSet().IsSubsetOf(CpuSet()));
  EXPECT_TRUE(CpuSet().Empty());
  EXPECT_EQ(CpuSet().Count(), 0);
}

TEST(CpuSet, OrderedIteration) {
  const CpuSet s = CpuSet::ParseList("3,63,64,127,128,8191").value();
  EXPECT_THAT(s.ToVector(), ElementsAre(3, 63, 64, 127, 128, 8191));
  EXPECT_EQ(s.First(), 3);
  EXPECT_EQ(s.Last(), 8191);
  EXPECT_EQ(s.Next(64), 127);
  EXPECT_EQ(s.Next(8191), -1);
  EXPECT_EQ(s.Next(-5), 3);
  EXPECT_EQ(s.Nth(0), 3);
  EXPECT_EQ(s.Nth(4), 128);
  EXPECT_EQ(s.Nth(6), -1);
  EXPECT_EQ(CpuSet().First(), -1);
  EXPECT_EQ(CpuSet().Last(), -1);
  int n = 0;
  for (int cpu : s) n += cpu >= 0;
  EXPECT_EQ(n, 6);
}

TEST(CpuSet, RangeCoversWordEdges) {
  EXPECT_EQ(CpuSet::Range(60, 130).Count(), 71);
  EXPECT_EQ(CpuSet::Range(0, 8191).Count(), 8192);
  EXPECT_EQ(CpuSet::Range(5, 4).Count(), 0);
  EXPECT_EQ(CpuSet::Range(64, 64).ToListString(), "64");
}

TEST(CpuSet, CheckedAdd) {
  CpuSet s;
  EXPECT_THAT(s.Add(8191), IsOk());
  EXPECT_THAT(s.Add(8192), StatusIs(StatusCode::kOutOfRange));
  EXPECT_THAT(s.Add(-1), StatusIs(StatusCode::kOutOfRange));
  EXPECT_FALSE(s.Contains(-1));
  EXPECT_FALSE(s.Contains(9000));
}

TEST(CpuSet, OrdersByLowestDifferingCpu) {
  EXPECT_TRUE(CpuSet{0} < CpuSet{1});
  EXPECT_FALSE(CpuSet{1} < CpuSet{0});
  EXPECT_TRUE(CpuSet({0, 5}) < CpuSet({0, 6}));
  EXPECT_FALSE(CpuSet{2} < CpuSet{2});
}

TEST(CpuSet, HugeInputErrorIsBounded) {
  const std::string huge(1 << 20, '7');
  Result<CpuSet> r = CpuSet::ParseList(huge);
  ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr("out of range")));
  EXPECT_LT(r.status().message().size(), 300u);
}

}  // namespace
}  // namespace dracpu
