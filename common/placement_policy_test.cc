#include "common/placement_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PlacementPolicy, DefaultsAreKubeletsWithUncoreAlignmentOn) {
  const PlacementPolicy p;
  EXPECT_FALSE(p.full_pcpus_only);
  EXPECT_FALSE(p.distribute_cpus_across_numa);
  EXPECT_FALSE(p.align_by_socket);
  EXPECT_TRUE(p.prefer_align_cpus_by_uncorecache);
  EXPECT_FALSE(p.distribute_cpus_across_cores);
  EXPECT_EQ(p.core_type, CoreTypePreference::kPerformance);
  EXPECT_FALSE(p.align_memory);
}

// Every key, under each of its spellings, sets the same field.
struct Spelling {
  const char* key;
  bool PlacementPolicy::*field;  // nullptr: coreType
};

class EverySpelling : public ::testing::TestWithParam<Spelling> {};

TEST_P(EverySpelling, SetsItsField) {
  PolicyParser parser;
  const Spelling& s = GetParam();
  const bool is_core_type = s.field == nullptr;
  ASSERT_THAT(parser.Set(s.key, is_core_type ? PolicyValue::Text("efficiency")
                                             : PolicyValue::Bool(!(PlacementPolicy().*(s.field)))),
              IsOk());
  auto set = parser.Finish();
  ASSERT_THAT(set, IsOk());
  const PlacementPolicy p = set->ApplyTo(PlacementPolicy());
  if (is_core_type) {
    EXPECT_EQ(p.core_type, CoreTypePreference::kEfficiency);
  } else {
    EXPECT_NE(p.*(s.field), PlacementPolicy().*(s.field)) << s.key;
  }
  EXPECT_TRUE(PolicyParser::IsKey(s.key));
}

INSTANTIATE_TEST_SUITE_P(
    Keys, EverySpelling,
    ::testing::Values(
        Spelling{"fullPCPUsOnly", &PlacementPolicy::full_pcpus_only},
        Spelling{"full-pcpus-only", &PlacementPolicy::full_pcpus_only},
        Spelling{"distributeCPUsAcrossNUMA", &PlacementPolicy::distribute_cpus_across_numa},
        Spelling{"distribute-cpus-across-numa", &PlacementPolicy::distribute_cpus_across_numa},
        Spelling{"alignBySocket", &PlacementPolicy::align_by_socket},
        Spelling{"align-by-socket", &PlacementPolicy::align_by_socket},
        Spelling{"preferAlignCPUsByUncoreCache",
                 &PlacementPolicy::prefer_align_cpus_by_uncorecache},
        Spelling{"alignByUncoreCache", &PlacementPolicy::prefer_align_cpus_by_uncorecache},
        Spelling{"prefer-align-cpus-by-uncorecache",
                 &PlacementPolicy::prefer_align_cpus_by_uncorecache},
        Spelling{"distributeCPUsAcrossCores", &PlacementPolicy::distribute_cpus_across_cores},
        Spelling{"distribute-cpus-across-cores", &PlacementPolicy::distribute_cpus_across_cores},
        Spelling{"alignMemory", &PlacementPolicy::align_memory},
        Spelling{"align-memory", &PlacementPolicy::align_memory}, Spelling{"coreType", nullptr},
        Spelling{"core-type", nullptr}),
    [](const auto& info) {
      std::string name;
      for (const char c : std::string(info.param.key)) name += (c == '-' ? '_' : c);
      return name;
    });

TEST(PolicyParser, CanonicalKeysAreTheConfigFileKeys) {
  EXPECT_THAT(PolicyParser::CanonicalKeys(),
              ElementsAre("fullPCPUsOnly", "distributeCPUsAcrossNUMA", "alignBySocket",
                          "preferAlignCPUsByUncoreCache", "distributeCPUsAcrossCores", "coreType",
                          "alignMemory"));
}

TEST(PolicyParser, TextBooleansAreGoSpellings) {
  for (const char* t : {"true", "True", "TRUE", "t", "T", "1"})
    EXPECT_THAT(ParseBool(t), IsOkAndHolds(true));
  for (const char* f : {"false", "False", "FALSE", "f", "F", "0"}) {
    EXPECT_THAT(ParseBool(f), IsOkAndHolds(false));
  }
  EXPECT_THAT(ParseBool("yes"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not true or false")));
}

TEST(PolicyParser, RefusesUnknownKeysBadValuesAndTwoSpellingsOfOneKey) {
  PolicyParser p;
  EXPECT_THAT(p.Set("fullCores", PolicyValue::Bool(true)),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown placement key")));
  EXPECT_THAT(p.Set("coreType", PolicyValue::Text("big")),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("performance, efficiency, any")));
  EXPECT_THAT(p.Set("coreType", PolicyValue::Bool(true)), StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(p.Set("alignBySocket", PolicyValue::Text("maybe")),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not true or false")));
  ASSERT_THAT(p.Set("alignByUncoreCache", PolicyValue::Bool(false)), IsOk());
  EXPECT_THAT(p.Set("preferAlignCPUsByUncoreCache", PolicyValue::Bool(false)),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("two spellings")));
}

TEST(PolicyParser, IncompatiblePairsOnlyWhenBothAreSetTrue) {
  PolicyParser both;
  ASSERT_THAT(both.Set("fullPCPUsOnly", PolicyValue::Bool(true)), IsOk());
  ASSERT_THAT(both.Set("distribute-cpus-across-cores", PolicyValue::Text("true")), IsOk());
  EXPECT_THAT(both.Finish(),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("\"fullPCPUsOnly\" and \"distributeCPUsAcrossCores\"")));
  PolicyParser numa;
  ASSERT_THAT(numa.Set("distributeCPUsAcrossNUMA", PolicyValue::Bool(true)), IsOk());
  EXPECT_THAT(numa.Finish(), IsOk());  // the uncore default does not count
  ASSERT_THAT(numa.Set("preferAlignCPUsByUncoreCache", PolicyValue::Bool(true)), IsOk());
  EXPECT_THAT(numa.Finish(), StatusIs(StatusCode::kInvalidArgument));
}

TEST(PolicyOverride, UnsetKeysKeepTheBase) {
  PlacementPolicy base;
  base.align_memory = true;
  base.core_type = CoreTypePreference::kAny;
  PolicyOverride o;
  o.full_pcpus_only = true;
  const PlacementPolicy p = o.ApplyTo(base);
  EXPECT_TRUE(p.full_pcpus_only);
  EXPECT_TRUE(p.align_memory);
  EXPECT_EQ(p.core_type, CoreTypePreference::kAny);
}

}  // namespace
}  // namespace dracpu
