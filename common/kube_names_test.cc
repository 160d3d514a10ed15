#include "common/kube_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/log_escape.h"

namespace dracpu {
namespace {

struct NameCase {
  std::string value;
  bool label;
  bool subdomain;
};

TEST(KubeNames, TableOfLabelsAndSubdomains) {
  const NameCase kCases[] = {
      {"default", true, true},
      {"kube-system", true, true},
      {"a", true, true},
      {"0abc9", true, true},
      {"claim.v1.example", false, true},
      {std::string(63, 'a'), true, true},
      {std::string(64, 'a'), false, false},
      {std::string(253, 'a').replace(63, 1, ".").replace(127, 1, ".").replace(191, 1, "."), false,
       true},
      {std::string(254, 'a'), false, false},
      {"", false, false},
      {"-a", false, false},
      {"a-", false, false},
      {"Upper", false, false},
      {"a..b", false, false},
      {".a", false, false},
      {"a.", false, false},
      {"../etc", false, false},
      {"a/b", false, false},
      {"a\nb", false, false},
      {"a b", false, false},
      {"caf\xc3\xa9", false, false},
  };
  for (const NameCase& c : kCases) {
    SCOPED_TRACE(LogEscape(c.value));
    EXPECT_EQ(ValidateDnsLabel(c.value, "namespace").ok(), c.label);
    EXPECT_EQ(ValidateDnsSubdomain(c.value, "claim name").ok(), c.subdomain);
  }
}

TEST(KubeNames, RefusalNamesTheFieldAndEscapesTheValue) {
  const Status s = ValidateDnsSubdomain("bad\nname", "ResourceClaim name");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::StartsWith("ResourceClaim name \"bad\\x0aname\" is not"));
  EXPECT_TRUE(IsLogSafe(s.message()));
  EXPECT_LT(ValidateDnsLabel(std::string(100000, 'x'), "namespace").message().size(), 400u);
}

}  // namespace
}  // namespace dracpu
