// The steps before validation: decode errors (400), unknown fields per Kubernetes version, and the
// fields of disabled feature gates dropped silently (with ratcheting on update).
#include "tests/sim/apiserver/slice_decode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/sim/apiserver/slice_fixtures.h"

namespace dracpu::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

FeatureGates Gates(const char* version, const char* set = "") {
  auto g = FeatureGates::ForVersion(version);
  EXPECT_TRUE(g.ok());
  EXPECT_TRUE(g->Set(set).ok()) << set;
  return *g;
}

DecodeResult Decode(const std::string& json, const FeatureGates& gates,
                    rapidjson::Document* out = nullptr) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  EXPECT_FALSE(doc.HasParseError()) << json;
  DecodeResult r = DecodeResourceSlice(doc, doc.GetAllocator(), gates);
  if (out != nullptr) out->Swap(doc);
  return r;
}

std::string Device(const std::string& body) { return "{\"name\":\"d\"," + body + "}"; }
std::string OneDevice(const std::string& body) { return testing::Slice("n1", Device(body), "s1"); }

struct DecodeErrorCase {
  const char* name;
  std::string body;  // device members
  const char* want;
};
void PrintTo(const DecodeErrorCase& c, std::ostream* os) { *os << c.name; }

class DecodeErrorTest : public ::testing::TestWithParam<DecodeErrorCase> {};

TEST_P(DecodeErrorTest, Is400WithUpstreamsMessage) {
  const DecodeErrorCase& c = GetParam();
  DecodeResult r = Decode(OneDevice(c.body), FeatureGates::Default());
  EXPECT_THAT(r.error, HasSubstr("ResourceSlice in version \"v1\" cannot be handled as a "
                                 "ResourceSlice: "));
  EXPECT_THAT(r.error, HasSubstr(c.want));
}

INSTANTIATE_TEST_SUITE_P(
    Rules, DecodeErrorTest,
    ::testing::Values(
        // Rule 61: quantities parse.
        DecodeErrorCase{"BadQuantity", "\"capacity\":{\"dra.cpu/cpu\":{\"value\":\"lots\"}}",
                        "quantities must match the regular expression"},
        DecodeErrorCase{"BadQuantitySuffix", "\"capacity\":{\"dra.cpu/cpu\":{\"value\":\"1kk\"}}",
                        "unable to parse quantity's suffix"},
        // Rule 62: JSON types match the Go fields.
        DecodeErrorCase{"IntAsString", "\"attributes\":{\"x\":{\"int\":\"1\"}}",
                        "json: cannot unmarshal string into Go struct field "
                        "DeviceAttribute.spec.devices.attributes.int of type int64"},
        DecodeErrorCase{"BoolAsString", "\"allowMultipleAllocations\":\"yes\"",
                        "cannot unmarshal string into Go struct field "
                        "Device.spec.devices.allowMultipleAllocations of type bool"},
        DecodeErrorCase{"FractionalInt", "\"attributes\":{\"x\":{\"int\":1.5}}",
                        "cannot unmarshal number 1.5 into Go struct field"},
        DecodeErrorCase{"ListNotArray", "\"attributes\":{\"x\":{\"strings\":\"a\"}}",
                        "of type []string"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SliceDecodeTest, ValidObjectsDecodeAndNumbersBecomeQuantityStrings) {
  rapidjson::Document doc;
  DecodeResult r = Decode(
      OneDevice("\"capacity\":{\"dra.cpu/cpu\":{\"value\":4}},\"attributes\":{\"x\":{\"int\":1}}"),
      FeatureGates::Default(), &doc);
  EXPECT_EQ(r.error, "");
  EXPECT_THAT(r.unknown_fields, IsEmpty());
  EXPECT_STREQ(doc["spec"]["devices"][0]["capacity"]["dra.cpu/cpu"]["value"].GetString(), "4");
}

TEST(SliceDecodeTest, Rule63UnknownFieldsDependOnTheVersion) {
  const std::string slice = OneDevice(
      "\"nodeAllocatableResources\":{\"cpu\":{\"mapping\":{\"deviceMultiplier\":\"1\"}}},"
      "\"attributes\":{\"r\":{\"strings\":[\"a\"]}},\"colour\":\"red\"");
  // 1.34 has neither list attributes nor node-allocatable resources in its Go types.
  EXPECT_THAT(Decode(slice, Gates("1.34")).unknown_fields,
              ElementsAre("spec.devices[0].nodeAllocatableResources",
                          "spec.devices[0].attributes[r].strings", "spec.devices[0].colour"));
  // 1.36 has both (behind gates that are off: dropped later, without a warning).
  EXPECT_THAT(Decode(slice, Gates("1.36")).unknown_fields, ElementsAre("spec.devices[0].colour"));
}

struct DropCase {
  const char* name;
  std::string body;
  const char* version;
  const char* gates;
  std::vector<std::string> dropped;
};
void PrintTo(const DropCase& c, std::ostream* os) { *os << c.name; }

class DropDisabledTest : public ::testing::TestWithParam<DropCase> {};

TEST_P(DropDisabledTest, DropsExactlyTheGatedFields) {
  const DropCase& c = GetParam();
  rapidjson::Document doc;
  ASSERT_EQ(Decode(OneDevice(c.body), Gates(c.version, c.gates), &doc).error, "");
  EXPECT_EQ(DropDisabledFields(doc, nullptr, Gates(c.version, c.gates)), c.dropped);
}

const char kPolicy[] =
    "\"allowMultipleAllocations\":true,\"capacity\":{\"dra.cpu/cpu\":{\"value\":\"4\","
    "\"requestPolicy\":{\"default\":\"1\",\"validRange\":{\"min\":\"1\"}}}}";
const char kList[] = "\"attributes\":{\"resource.kubernetes.io/pcieRoot\":{\"strings\":[\"a\"]}}";
const char kMapping[] =
    "\"nodeAllocatableResources\":{\"cpu\":{\"mapping\":{\"deviceMultiplier\":\"1\"}}}";
const char kTaints[] = "\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]";
const char kBinding[] =
    "\"bindsToNode\":true,\"bindingConditions\":[\"a\"],\"bindingFailureConditions\":[\"b\"]";

INSTANTIATE_TEST_SUITE_P(
    Gates, DropDisabledTest,
    ::testing::Values(
        DropCase{"ConsumableOff134",
                 kPolicy,
                 "1.34",
                 "",
                 {"spec.devices[0].allowMultipleAllocations",
                  "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy"}},
        DropCase{"ConsumableOn136", kPolicy, "1.36", "", {}},
        DropCase{"ConsumableTurnedOn134", kPolicy, "1.34", "DRAConsumableCapacity=true", {}},
        DropCase{"ListsOff136",
                 kList,
                 "1.36",
                 "",
                 {"spec.devices[0].attributes[resource.kubernetes.io/pcieRoot].strings"}},
        DropCase{"ListsOn136", kList, "1.36", "DRAListTypeAttributes=true", {}},
        DropCase{
            "MappingOff137", kMapping, "1.37", "", {"spec.devices[0].nodeAllocatableResources"}},
        DropCase{"TaintsOff135", kTaints, "1.35", "", {"spec.devices[0].taints"}},
        DropCase{"TaintsOn136", kTaints, "1.36", "", {}},
        DropCase{"BindingOff134",
                 kBinding,
                 "1.34",
                 "",
                 {"spec.devices[0].bindsToNode", "spec.devices[0].bindingConditions",
                  "spec.devices[0].bindingFailureConditions"}},
        DropCase{
            "PerDeviceNodesOff135", "\"allNodes\":true", "1.35", "", {"spec.devices[0].allNodes"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SliceDecodeTest, AStoredObjectThatUsesAFeatureKeepsIt) {
  const FeatureGates gates = Gates("1.34");
  rapidjson::Document old;
  old.Parse(OneDevice(kPolicy).c_str());
  rapidjson::Document doc;
  ASSERT_EQ(Decode(OneDevice(kPolicy), gates, &doc).error, "");
  EXPECT_THAT(DropDisabledFields(doc, &old, gates), IsEmpty());
}

TEST(FeatureGatesTest, PresetsFollowUpstreamsHistory) {
  EXPECT_FALSE(Gates("1.34").Enabled(Gate::kConsumableCapacity));
  EXPECT_FALSE(Gates("1.35").Enabled(Gate::kConsumableCapacity));
  EXPECT_TRUE(Gates("1.36").Enabled(Gate::kConsumableCapacity));
  EXPECT_TRUE(Gates("1.37").Enabled(Gate::kConsumableCapacity));
  EXPECT_FALSE(Gates("1.35").Exists(Gate::kListTypeAttributes));
  EXPECT_FALSE(Gates("1.37").Enabled(Gate::kListTypeAttributes));
  EXPECT_TRUE(Gates("1.37").Enabled(Gate::kFractionalCapacityRange));
  EXPECT_TRUE(Gates("1.34").Enabled(Gate::kResourceClaimDeviceStatus));
  EXPECT_FALSE(FeatureGates::ForVersion("1.33").ok());
  FeatureGates g = Gates("1.35");
  EXPECT_FALSE(g.Set("DRAListTypeAttributes=true").ok()) << "no such gate in 1.35";
  EXPECT_FALSE(g.Set("NoSuchGate=true").ok());
  EXPECT_FALSE(g.Set("DRAConsumableCapacity=yes").ok());
}

}  // namespace
}  // namespace dracpu::sim
