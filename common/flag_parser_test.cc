#include "common/flag_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/cpu_set.h"
#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Flags {
  std::string node = "default-node";
  bool expose = false;
  int v = 0;
  CpuSet reserved;
};

FlagParser Parser(Flags& f) {
  FlagParser p;
  p.String("node-name", &f.node, "node name");
  p.Bool("expose-pcie-roots", &f.expose, "publish PCIe roots");
  p.Int("v", &f.v, "log verbosity");
  p.Custom(
      "reserved-cpus", "CPULIST",
      [&f](std::string_view v) -> Status {
        ASSIGN_OR_RETURN(f.reserved, CpuSet::ParseList(v, "reserved CPUs"));
        return Status::Ok();
      },
      "reserved CPUs");
  return p;
}

TEST(FlagParser, GoStyleSpellings) {
  Flags f;
  FlagParser p = Parser(f);
  auto rest =
      p.Parse({"--node-name=n1", "-v", "4", "--expose-pcie-roots", "--reserved-cpus", "0-1"});
  ASSERT_THAT(rest, IsOkAndHolds(IsEmpty()));
  EXPECT_EQ(f.node, "n1");
  EXPECT_EQ(f.v, 4);
  EXPECT_TRUE(f.expose);
  EXPECT_EQ(f.reserved.ToListString(), "0-1");
  EXPECT_TRUE(p.WasSet("node-name"));
  EXPECT_TRUE(p.WasSet("v"));
}

TEST(FlagParser, DefaultsStayAndAreNotMarkedSet) {
  Flags f;
  FlagParser p = Parser(f);
  ASSERT_THAT(p.Parse({"-v=2", "--expose-pcie-roots=false"}), IsOk());
  EXPECT_EQ(f.node, "default-node");
  EXPECT_FALSE(p.WasSet("node-name"));
  EXPECT_TRUE(p.WasSet("expose-pcie-roots"));
  EXPECT_FALSE(f.expose);
}

TEST(FlagParser, PositionalsEndTheFlags) {
  Flags f;
  FlagParser p = Parser(f);
  EXPECT_THAT(p.Parse({"-v=1", "gatherinfo", "--format", "json"}),
              IsOkAndHolds(ElementsAre("gatherinfo", "--format", "json")));
  EXPECT_THAT(p.Parse({"--", "-x"}), IsOkAndHolds(ElementsAre("-x")));
}

TEST(FlagParser, ErrorsNameFlagAndValue) {
  Flags f;
  FlagParser p = Parser(f);
  EXPECT_THAT(p.Parse({"--nope=1"}), StatusIs(StatusCode::kInvalidArgument, "unknown flag --nope"));
  EXPECT_THAT(p.Parse({"--node-name"}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("needs a value")));
  EXPECT_THAT(p.Parse({"-v=x"}), StatusIs(StatusCode::kInvalidArgument,
                                          HasSubstr("flag --v=x: \"x\" is not a whole number")));
  EXPECT_THAT(p.Parse({"--expose-pcie-roots=yes"}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not true or false")));
  EXPECT_THAT(p.Parse({"--reserved-cpus=3-1"}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("reversed range")));
}

TEST(FlagParser, UsageListsEveryFlag) {
  Flags f;
  FlagParser p = Parser(f);
  const std::string usage = p.Usage();
  EXPECT_THAT(usage, HasSubstr("--node-name VALUE"));
  EXPECT_THAT(usage, HasSubstr("--reserved-cpus CPULIST"));
  EXPECT_THAT(usage, HasSubstr("--expose-pcie-roots"));
}

}  // namespace
}  // namespace dracpu
