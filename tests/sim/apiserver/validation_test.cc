#include "tests/sim/apiserver/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <functional>

#include "tests/sim/apiserver/slice_fixtures.h"

namespace dracpu::sim {
namespace {

using testing::GroupedDevice;
using ::testing::HasSubstr;
using testing::IndividualDevices;
using ::testing::IsEmpty;
using testing::Slice;

std::vector<FieldError> Validate(const std::string& json, const std::string& old_json = "") {
  rapidjson::Document doc, old;
  doc.Parse(json.c_str());
  EXPECT_FALSE(doc.HasParseError()) << json;
  if (!old_json.empty()) old.Parse(old_json.c_str());
  return ValidateResourceSlice(doc, old_json.empty() ? nullptr : &old);
}

std::string All(const std::vector<FieldError>& errors) {
  std::string out;
  for (const FieldError& e : errors) out += e.ToString() + "\n";
  return out;
}

TEST(ValidationTest, DracpuShapedSlicesAreValid) {
  EXPECT_THAT(Validate(Slice("node-1", GroupedDevice(0, 32) + "," + GroupedDevice(1, 32), "s1")),
              IsEmpty());
  EXPECT_THAT(Validate(Slice("node-1", IndividualDevices(128), "s1")), IsEmpty());
  EXPECT_THAT(Validate(Slice("node-1", "", "s1")), IsEmpty()) << "an empty pool is allowed";
}

struct BadCase {
  const char* name;
  std::string slice;
  std::string want_field;  // the error's field path
  std::string want_text;   // part of "<type>: <detail>"
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ValidationBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ValidationBadTest, NamesTheField) {
  const BadCase& c = GetParam();
  const std::vector<FieldError> errors = Validate(c.slice);
  ASSERT_FALSE(errors.empty());
  bool found = false;
  for (const FieldError& e : errors) {
    if (e.field == c.want_field && e.ToString().find(c.want_text) != std::string::npos)
      found = true;
  }
  EXPECT_TRUE(found) << "want " << c.want_field << " / " << c.want_text << ", got:\n"
                     << All(errors);
}

std::string Device(const std::string& name, const std::string& attributes,
                   const std::string& capacity = "{}") {
  return "{\"name\":\"" + name + "\",\"attributes\":" + attributes + ",\"capacity\":" + capacity +
         "}";
}

std::string ManyAttributes(int n) {
  std::string out = "{";
  for (int i = 0; i < n; ++i)
    out += (i ? "," : "") + std::string("\"a") + std::to_string(i) + "\":{\"int\":1}";
  return out + "}";
}

INSTANTIATE_TEST_SUITE_P(
    Table, ValidationBadTest,
    ::testing::Values(
        BadCase{"TooManyDevices", Slice("n1", IndividualDevices(129), "s"), "spec.devices",
                "Too many: 129: must have at most 128 items"},
        BadCase{
            "TooManyDevicesWithTaints",
            Slice("n1",
                  IndividualDevices(64) +
                      ",{\"name\":\"t\",\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]}",
                  "s"),
            "spec.devices", "must have at most 64 items"},
        BadCase{"TooManyDevicesWithListAttributes",
                Slice("n1",
                      IndividualDevices(64) +
                          ",{\"name\":\"l\",\"attributes\":{\"resource.kubernetes.io/pcieRoot\":"
                          "{\"strings\":[\"pci0000:00\"]}}}",
                      "s"),
                "spec.devices", "must have at most 64 items"},
        BadCase{"TooManyAttributeValues",
                Slice("n1",
                      Device(
                          "d", "{\"x\":{\"ints\":[" +
                                   [] {
                                     std::string v;
                                     for (int i = 0; i < 49; ++i)
                                       v += (i ? "," : "") + std::to_string(i);
                                     return v;
                                   }() +
                                   "]}}"),
                      "s"),
                "spec.devices[0].attributes", "Too many: 49: must have at most 48 items"},
        BadCase{"DeviceNameNotDnsLabel", Slice("n1", Device("CPU_0", "{}"), "s"),
                "spec.devices[0].name", "Invalid value: \"CPU_0\""},
        BadCase{"DeviceNameTooLong", Slice("n1", Device(std::string(64, 'a'), "{}"), "s"),
                "spec.devices[0].name", "Invalid value"},
        BadCase{"DuplicateDeviceName",
                Slice("n1", Device("cpu0", "{}") + "," + Device("cpu0", "{}"), "s"),
                "spec.devices[1].name", "Duplicate value: \"cpu0\""},
        BadCase{"TwoValueTypes",
                Slice("n1", Device("d", "{\"dra.cpu/x\":{\"int\":1,\"string\":\"a\"}}"), "s"),
                "spec.devices[0].attributes[dra.cpu/x]", "exactly one value must be specified"},
        BadCase{"NoValueType", Slice("n1", Device("d", "{\"dra.cpu/x\":{}}"), "s"),
                "spec.devices[0].attributes[dra.cpu/x]", "Required value"},
        BadCase{
            "StringTooLong",
            Slice("n1", Device("d", "{\"x\":{\"string\":\"" + std::string(65, 'a') + "\"}}"), "s"),
            "spec.devices[0].attributes[x].string", "Too long: may not be more than 64 bytes"},
        BadCase{"BadVersion", Slice("n1", Device("d", "{\"v\":{\"version\":\"1.2\"}}"), "s"),
                "spec.devices[0].attributes[v].version", "semver"},
        BadCase{"AttributeIdNotCIdentifier",
                Slice("n1", Device("d", "{\"dra.cpu/1abc\":{\"int\":1}}"), "s"),
                "spec.devices[0].attributes[dra.cpu/1abc]", "C identifier"},
        BadCase{
            "AttributeIdTooLong",
            Slice("n1", Device("d", "{\"dra.cpu/" + std::string(33, 'a') + "\":{\"int\":1}}"), "s"),
            "spec.devices[0].attributes[dra.cpu/" + std::string(33, 'a') + "]", "Too long"},
        BadCase{"AttributeDomainInvalid",
                Slice("n1", Device("d", "{\"Dra_Cpu/x\":{\"int\":1}}"), "s"),
                "spec.devices[0].attributes[Dra_Cpu/x]", "RFC 1123 subdomain"},
        BadCase{"TooManyAttributesAndCapacities", Slice("n1", Device("d", ManyAttributes(33)), "s"),
                "spec.devices[0].attributes", "Too many: 33"},
        BadCase{"CapacityNotAQuantity",
                Slice("n1", Device("d", "{}", "{\"dra.cpu/cpu\":{\"value\":\"lots\"}}"), "s"),
                "spec.devices[0].capacity[dra.cpu/cpu].value", "must be a quantity"},
        BadCase{"RequestPolicyBothKinds",
                Slice("n1",
                      Device("d", "{}",
                             "{\"c\":{\"value\":\"4\",\"requestPolicy\":{\"validValues\":[\"1\"],"
                             "\"validRange\":{\"min\":\"1\"}}}}"),
                      "s"),
                "spec.devices[0].capacity[c].requestPolicy", "exactly one policy"},
        BadCase{
            "NoPoolCount",
            "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"dra.cpu\",\"nodeName\":\"n\","
            "\"pool\":{\"name\":\"n\",\"generation\":0}}}",
            "spec.pool.resourceSliceCount", "must be greater than zero"},
        BadCase{"NoNodeSelection",
                "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"dra.cpu\","
                "\"pool\":{\"name\":\"n\",\"resourceSliceCount\":1}}}",
                "spec", "exactly one of `nodeName`"},
        BadCase{
            "NodeNameAndAllNodes",
            "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"dra.cpu\",\"nodeName\":\"n\","
            "\"allNodes\":true,\"pool\":{\"name\":\"n\",\"resourceSliceCount\":1}}}",
            "spec", "multiple fields are set"},
        BadCase{"DriverNotLowerCase", Slice("n1", "", "s", "DRA.cpu"), "spec.driver",
                "RFC 1123 subdomain"},
        BadCase{"BadSliceName", Slice("n1", "", "Bad_Name"), "metadata.name", "RFC 1123"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ValidationTest, ImmutableFieldsOnUpdate) {
  const std::string old_slice = Slice("n1", "", "s");
  EXPECT_THAT(Validate(Slice("n1", "", "s", "dra.cpu", 2), old_slice), IsEmpty());
  const std::vector<FieldError> errors = Validate(Slice("n2", "", "s"), old_slice);
  ASSERT_FALSE(errors.empty());
  EXPECT_THAT(All(errors), HasSubstr("spec.nodeName: Invalid value: \"n2\": field is immutable"));
  EXPECT_THAT(All(errors), HasSubstr("spec.pool.name"));
}

TEST(ValidationTest, NameRules) {
  EXPECT_TRUE(IsDnsLabel("cpudevnuma000"));
  EXPECT_FALSE(IsDnsLabel("-a"));
  EXPECT_FALSE(IsDnsLabel("a.b"));
  EXPECT_TRUE(IsDnsSubdomain("00000-dra.cpu-node1-x7k2p"));
  EXPECT_FALSE(IsDnsSubdomain("a..b"));
  EXPECT_TRUE(IsQuantity("500m"));
  EXPECT_TRUE(IsQuantity("2Gi"));
  EXPECT_TRUE(IsQuantity("1e3"));
  EXPECT_FALSE(IsQuantity("1.2.3"));
  EXPECT_TRUE(IsSemver("1.2.3-rc.1+build.5"));
  EXPECT_FALSE(IsSemver("01.2.3"));
}

}  // namespace
}  // namespace dracpu::sim
