#include "common/local_time_zone.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace dracpu {
namespace {

TEST(PinLocalTimeZoneTest, SetsTheZoneFileWhenTzIsUnset) {
  ::unsetenv("TZ");
  PinLocalTimeZone();
  ASSERT_NE(std::getenv("TZ"), nullptr);
  EXPECT_EQ(std::string(std::getenv("TZ")), ":/etc/localtime");
}

TEST(PinLocalTimeZoneTest, KeepsAZoneTheOperatorSet) {
  ::setenv("TZ", "Europe/Paris", 1);
  PinLocalTimeZone();
  EXPECT_EQ(std::string(std::getenv("TZ")), "Europe/Paris");
  ::setenv("TZ", "", 1);  // set but empty (UTC to glibc) is a choice too
  PinLocalTimeZone();
  EXPECT_EQ(std::string(std::getenv("TZ")), "");
}

}  // namespace
}  // namespace dracpu
