#include "dra-agent/cdi/cdi_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/status_matchers.h"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;

constexpr char kUid[] = "8ec6fd12-bb08-4936-a857-866f50153c21";

TEST(CdiSpec, NamesMatchTheReferenceDriver) {
  EXPECT_EQ(CdiSpecFileName(kUid), "dra.k8s.io-cpu_claim-8ec6fd12-bb08-4936-a857-866f50153c21.json");
  EXPECT_EQ(CdiDeviceId(kUid), "dra.k8s.io/cpu=claim-8ec6fd12-bb08-4936-a857-866f50153c21");
}

TEST(CdiSpec, RendersTheExactDocument) {
  EXPECT_EQ(RenderCdiSpec("1abc", CpuSet::ParseList("4-5,68-69").value()),
            R"({
  "cdiVersion": "0.5.0",
  "kind": "dra.k8s.io/cpu",
  "devices": [
    {
      "name": "claim-1abc",
      "containerEdits": {
        "env": [
          "DRA_CPUSET_1abc=4-5,68-69"
        ]
      }
    }
  ]
}
)");
}

TEST(CdiSpec, ParsesWhatItRenders) {
  auto claim = ParseCdiSpec(RenderCdiSpec(kUid, CpuSet::ParseList("0-3").value()), "f.json");
  ASSERT_THAT(claim, IsOk());
  EXPECT_EQ(claim->claim_uid, kUid);
  EXPECT_EQ(claim->cpus.ToListString(), "0-3");
}

TEST(CdiSpec, ParsesTheGoDriversVersion) {
  auto claim = ParseCdiSpec(R"({"cdiVersion":"0.8.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a1","containerEdits":{"env":["DRA_CPUSET_a1=2"]}}]})",
                            "go.json");
  ASSERT_THAT(claim, IsOk());
  EXPECT_EQ(claim->cpus.ToListString(), "2");
}

struct BadSpec {
  const char* json;
  const char* reason;
};

class CdiSpecRejects : public ::testing::TestWithParam<BadSpec> {};

TEST_P(CdiSpecRejects, NamesFileAndReason) {
  EXPECT_THAT(ParseCdiSpec(GetParam().json, "/var/run/cdi/x.json"),
              StatusIs(StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("/var/run/cdi/x.json"), HasSubstr(GetParam().reason))));
}

INSTANTIATE_TEST_SUITE_P(
    Bad, CdiSpecRejects,
    ::testing::Values(
        BadSpec{"", "not valid JSON"}, BadSpec{"[]", "not a JSON object"},
        BadSpec{R"({"cdiVersion":"0.2.0","kind":"dra.k8s.io/cpu","devices":[]})", "cdiVersion"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"other/cpu","devices":[]})", "kind is not"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[]})", "exactly one device"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"x"}]})", "does not start with claim-"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a"}]})", "containerEdits.env"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["X=1"]}}]})", "no DRA_CPUSET_ entry"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["DRA_CPUSET_b=1"]}}]})", "env names claim b"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["DRA_CPUSET_a=1","DRA_CPUSET_a=2"]}}]})", "more than one"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["DRA_CPUSET_a=x"]}}]})", "expected a CPU id"}));

}  // namespace
}  // namespace dracpu::dra
