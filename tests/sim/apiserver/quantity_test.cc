// Quantity as the simulator's validation needs it: upstream's parse errors, exact compare and add,
// rounding-up Value/MilliValue, and the canonical String() printed in messages.
#include "tests/sim/apiserver/quantity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dracpu::sim {
namespace {

Quantity Q(const char* text) {
  std::string error;
  auto q = Quantity::Parse(text, &error);
  EXPECT_TRUE(q.has_value()) << text << ": " << error;
  return q.value_or(Quantity::FromInt(0));
}

struct ParseCase {
  const char* text;
  const char* canonical;  // nullptr: refused
  const char* error = "";
};

class QuantityParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(QuantityParseTest, ParsesLikeUpstream) {
  const ParseCase& c = GetParam();
  std::string error;
  auto q = Quantity::Parse(c.text, &error);
  if (c.canonical == nullptr) {
    EXPECT_FALSE(q.has_value()) << c.text;
    EXPECT_THAT(error, ::testing::HasSubstr(c.error));
  } else {
    ASSERT_TRUE(q.has_value()) << c.text << ": " << error;
    EXPECT_EQ(q->String(), c.canonical) << c.text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuantityParseTest,
    ::testing::Values(ParseCase{"4", "4"}, ParseCase{"1000", "1k"}, ParseCase{"1500", "1500"},
                      ParseCase{"0.5", "500m"}, ParseCase{"1500m", "1500m"},
                      ParseCase{"4000m", "4"}, ParseCase{"2Gi", "2Gi"}, ParseCase{"1024Ki", "1Mi"},
                      ParseCase{"1e3", "1e3"}, ParseCase{"+3", "3"}, ParseCase{"-2", "-2"},
                      ParseCase{".5", "500m"}, ParseCase{"0", "0"}, ParseCase{"1n", "1n"},
                      ParseCase{"", nullptr, "quantities must match the regular expression"},
                      ParseCase{"lots", nullptr, "quantities must match the regular expression"},
                      ParseCase{"1.2.3", nullptr, "unable to parse quantity's suffix"},
                      ParseCase{"1Qi", nullptr, "must match the regular expression"},
                      ParseCase{"1kk", nullptr, "unable to parse quantity's suffix"}),
    [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(QuantityTest, CompareAndAddAreExact) {
  EXPECT_EQ(Q("1").Compare(Q("1000m")), 0);
  EXPECT_LT(Q("999m").Compare(Q("1")), 0);
  EXPECT_GT(Q("1Ki").Compare(Q("1k")), 0);
  EXPECT_LT(Q("-3").Compare(Q("2")), 0);
  EXPECT_EQ(Q("1").Plus(Q("1")).String(), "2");
  EXPECT_EQ(Q("1500m").Plus(Q("500m")).String(), "2");
  EXPECT_EQ(Q("3").Plus(Q("-5")).String(), "-2");
}

TEST(QuantityTest, ValueRoundsUp) {
  EXPECT_EQ(Q("1500m").Value(), 2);
  EXPECT_EQ(Q("2").Value(), 2);
  EXPECT_EQ(Q("1n").MilliValue(), 1);
  EXPECT_EQ(Q("2.5").MilliValue(), 2500);
  EXPECT_FALSE(Q("1e30").Value().has_value());
  EXPECT_TRUE(Q("0.5").IsFractional());
  EXPECT_FALSE(Q("2").IsFractional());
  EXPECT_TRUE(Q("1500m").IsMilliExact());
  EXPECT_FALSE(Q("1500u").IsMilliExact());
}

}  // namespace
}  // namespace dracpu::sim
