#include "dra-agent/cdi/cdi_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <regex>
#include <set>

#include "tests/testing/status_matchers.h"

namespace dracpu::dra {
namespace {

using ::testing::HasSubstr;

constexpr char kUid[] = "8ec6fd12-bb08-4936-a857-866f50153c21";

TEST(CdiSpec, NamesMatchTheReferenceDriver) {
  EXPECT_EQ(CdiSpecFileName(kUid),
            "dra.k8s.io-cpu_claim-8ec6fd12-bb08-4936-a857-866f50153c21.json");
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
  auto claim = ParseCdiSpec(
      R"({"cdiVersion":"0.8.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a1","containerEdits":{"env":["DRA_CPUSET_a1=2"]}}]})",
      "go.json");
  ASSERT_THAT(claim, IsOk());
  EXPECT_EQ(claim->cpus.ToListString(), "2");
}

// The CDI schema rules of protocols.md §8, checked independently of our reader: required keys
// and no unknown ones (the CDI library parses strictly), >= 1 device, non-empty containerEdits,
// env entries "NAME=VALUE" with '=' not first, vendor/class/device name character rules, and a
// cdiVersion the content allows (a device name starting with a digit needs >= 0.5.0; no
// annotations, so 0.5.0 suffices).
std::vector<std::string> CdiSchemaViolations(const std::string& json) {
  std::vector<std::string> v;
  rapidjson::Document d;
  d.Parse(json.c_str());
  if (d.HasParseError() || !d.IsObject()) return {"not a JSON object"};
  const std::set<std::string> top = {"cdiVersion", "kind", "devices", "annotations",
                                     "containerEdits"};
  for (const auto& m : d.GetObject()) {
    if (!top.count(m.name.GetString()))
      v.push_back(std::string("unknown key ") + m.name.GetString());
  }
  const std::set<std::string> versions = {"0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};
  if (!d.HasMember("cdiVersion") || !d["cdiVersion"].IsString() ||
      !versions.count(d["cdiVersion"].GetString())) {
    v.push_back("cdiVersion missing or below 0.5.0");
  }
  const std::regex kind(
      R"([A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?/[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?)");
  if (!d.HasMember("kind") || !d["kind"].IsString() ||
      !std::regex_match(d["kind"].GetString(), kind)) {
    v.push_back("bad kind");
  } else if (std::string(d["kind"].GetString())
                 .find('.', std::string(d["kind"].GetString()).find('/')) != std::string::npos) {
    v.push_back("a '.' in the class needs cdiVersion 0.6.0");
  }
  if (!d.HasMember("devices") || !d["devices"].IsArray() || d["devices"].Empty())
    return v.push_back("no devices"), v;
  const std::regex device_name(R"([A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?)");
  for (const auto& dev : d["devices"].GetArray()) {
    for (const auto& m : dev.GetObject()) {
      const std::string k = m.name.GetString();
      if (k != "name" && k != "containerEdits" && k != "annotations")
        v.push_back("unknown device key " + k);
    }
    if (!dev.HasMember("name") || !std::regex_match(dev["name"].GetString(), device_name))
      v.push_back("bad device name");
    if (!dev.HasMember("containerEdits") || !dev["containerEdits"].IsObject() ||
        dev["containerEdits"].ObjectEmpty()) {
      v.push_back("empty containerEdits");
      continue;
    }
    for (const auto& m : dev["containerEdits"].GetObject()) {
      if (std::string(m.name.GetString()) != "env")
        v.push_back(std::string("unexpected edit ") + m.name.GetString());
    }
    for (const auto& e : dev["containerEdits"]["env"].GetArray()) {
      const std::string entry = e.GetString();
      if (entry.find('=') == std::string::npos || entry.find('=') == 0)
        v.push_back("bad env entry " + entry);
    }
  }
  return v;
}

TEST(CdiSpec, ConformsToTheCdiSchemaRules) {
  for (const char* uid : {"8ec6fd12-bb08-4936-a857-866f50153c21", "0abc", "Z"}) {
    const std::string spec = RenderCdiSpec(uid, CpuSet::ParseList("0-3,64").value());
    EXPECT_THAT(CdiSchemaViolations(spec), ::testing::IsEmpty()) << spec;
    EXPECT_EQ(spec.find("annotations"), std::string::npos)
        << "annotations would need cdiVersion 0.6.0";
  }
  // The checker itself rejects what the rules forbid.
  EXPECT_THAT(
      CdiSchemaViolations(
          R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"x","containerEdits":{"env":["=x"]}}]})"),
      ::testing::ElementsAre("cdiVersion missing or below 0.5.0", "bad env entry =x"));
  EXPECT_THAT(
      CdiSchemaViolations(
          R"({"cdiVersion":"0.5.0","kind":"a/b.c","devices":[{"name":"-x","containerEdits":{}}],"x":1})"),
      ::testing::ElementsAre("unknown key x", "a '.' in the class needs cdiVersion 0.6.0",
                             "bad device name", "empty containerEdits"));
}

struct BadSpec {
  const char* json;
  const char* reason;
};

class CdiSpecRejects : public ::testing::TestWithParam<BadSpec> {};

TEST_P(CdiSpecRejects, NamesFileAndReason) {
  EXPECT_THAT(
      ParseCdiSpec(GetParam().json, "/var/run/cdi/x.json"),
      StatusIs(StatusCode::kInvalidArgument,
               ::testing::AllOf(HasSubstr("/var/run/cdi/x.json"), HasSubstr(GetParam().reason))));
}

INSTANTIATE_TEST_SUITE_P(
    Bad, CdiSpecRejects,
    ::testing::Values(
        BadSpec{"", "not valid JSON"}, BadSpec{"[]", "not a JSON object"},
        BadSpec{R"({"cdiVersion":"0.2.0","kind":"dra.k8s.io/cpu","devices":[]})", "cdiVersion"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"other/cpu","devices":[]})", "kind is not"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[]})",
                "exactly one device"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"x"}]})",
                "does not start with claim-"},
        BadSpec{R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a"}]})",
                "containerEdits.env"},
        BadSpec{
            R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["X=1"]}}]})",
            "no DRA_CPUSET_ entry"},
        BadSpec{
            R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["DRA_CPUSET_b=1"]}}]})",
            "env names claim b"},
        BadSpec{
            R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["DRA_CPUSET_a=1","DRA_CPUSET_a=2"]}}]})",
            "more than one"},
        BadSpec{
            R"({"cdiVersion":"0.5.0","kind":"dra.k8s.io/cpu","devices":[{"name":"claim-a","containerEdits":{"env":["DRA_CPUSET_a=x"]}}]})",
            "expected a CPU id"}));

}  // namespace
}  // namespace dracpu::dra
