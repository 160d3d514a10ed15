#include "common/backoff.h"

#include <gtest/gtest.h>

#include "tests/testing/fake_clock.h"

namespace dracpu {
namespace {

using ::dracpu::testing::FixedRandom;

using std::chrono::milliseconds;

struct BackoffCase {
  const char* name;
  BackoffPolicy policy;
  double random;
  std::vector<int64_t> want_ms;
};

class BackoffTest : public ::testing::TestWithParam<BackoffCase> {};

TEST_P(BackoffTest, DelaysGrowAndStayUnderTheCap) {
  const BackoffCase& c = GetParam();
  FixedRandom random(c.random);
  Backoff backoff(c.policy, random);
  std::vector<int64_t> got;
  for (size_t i = 0; i < c.want_ms.size(); ++i) got.push_back(backoff.Next().count());
  EXPECT_EQ(got, c.want_ms);
}

INSTANTIATE_TEST_SUITE_P(
    Table, BackoffTest,
    ::testing::Values(
        // random 0 -> no jitter: the base sequence, capped at max.
        BackoffCase{"NoJitterIsBase",
                    {milliseconds(100), milliseconds(1000), 2.0, 0.5},
                    0.0,
                    {100, 200, 400, 800, 1000, 1000}},
        // random 0.5, jitter 0.5 -> 75% of the base.
        BackoffCase{"JitterTakesUpToHalf",
                    {milliseconds(100), milliseconds(1000), 2.0, 0.5},
                    0.5,
                    {75, 150, 300, 600, 750, 750}},
        // jitter 1 with random near 1 -> close to zero, never negative.
        BackoffCase{
            "FullJitter", {milliseconds(1000), milliseconds(1000), 2.0, 1.0}, 0.999, {1, 1}},
        BackoffCase{"MultiplierThree",
                    {milliseconds(10), milliseconds(100000), 3.0, 0.0},
                    0.7,
                    {10, 30, 90, 270}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(BackoffTest, ResetStartsOver) {
  FixedRandom random(0.0);
  Backoff backoff({milliseconds(100), milliseconds(1000), 2.0, 0.5}, random);
  EXPECT_EQ(backoff.Next(), milliseconds(100));
  EXPECT_EQ(backoff.Next(), milliseconds(200));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), milliseconds(100));
}

TEST(BackoffTest, ManyAttemptsDoNotOverflow) {
  FixedRandom random(0.0);
  Backoff backoff({milliseconds(250), milliseconds(30000), 2.0, 0.5}, random);
  for (int i = 0; i < 1000; ++i) {
    const milliseconds d = backoff.Next();
    ASSERT_GE(d.count(), 0);
    ASSERT_LE(d, milliseconds(30000));
  }
  EXPECT_EQ(backoff.Next(), milliseconds(30000));
}

}  // namespace
}  // namespace dracpu
