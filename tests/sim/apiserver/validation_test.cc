// ValidateResourceSlice, rule by rule (the numbers of ../shared/spec/resourceslice-validation.md):
// for every rule a driver can break, one object that passes and one that fails with upstream's
// field path and message. Rules 61-63 (decode) are in slice_decode_test.cc.
#include "tests/sim/apiserver/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/sim/apiserver/slice_fixtures.h"

namespace dracpu::sim {
namespace {

using testing::GroupedDevice;
using ::testing::HasSubstr;
using testing::IndividualDevices;
using ::testing::IsEmpty;
using testing::Slice;

// Every gate on, so each rule is reachable (gates only decide what was dropped before).
FeatureGates AllGates() {
  FeatureGates g = *FeatureGates::ForVersion("1.37");
  for (size_t i = 0; i < kGateCount; ++i) g.SetEnabled(static_cast<Gate>(i), true);
  return g;
}

std::vector<FieldError> Validate(const std::string& json, const std::string& old_json = "",
                                 const FeatureGates& gates = AllGates()) {
  rapidjson::Document doc, old;
  doc.Parse(json.c_str());
  EXPECT_FALSE(doc.HasParseError()) << json;
  if (!old_json.empty()) old.Parse(old_json.c_str());
  return ValidateResourceSlice(doc, old_json.empty() ? nullptr : &old, gates);
}

std::string All(const std::vector<FieldError>& errors) {
  std::string out;
  for (const FieldError& e : errors) out += e.ToString() + "\n";
  return out;
}

// A slice "s1" of node n1 with one device "d" whose members are `body`.
std::string Dev(const std::string& body) {
  return Slice("n1", "{\"name\":\"d\"" + (body.empty() ? "" : "," + body) + "}", "s1");
}
// A slice whose metadata is `meta` (an object body) and spec `spec` (an object body).
std::string Obj(const std::string& meta, const std::string& spec) {
  return "{\"metadata\":{" + meta + "},\"spec\":{" + spec + "}}";
}
const char kSpec[] = R"("driver":"dra.cpu","pool":{"name":"n1","resourceSliceCount":1})";
std::string Spec(const std::string& extra) { return std::string(kSpec) + "," + extra; }
std::string Meta(const std::string& extra) {
  return std::string(R"("name":"s1")") + (extra.empty() ? "" : "," + extra);
}
std::string Cap(const std::string& value, const std::string& policy, bool multi = true) {
  return std::string(multi ? R"("allowMultipleAllocations":true,)" : "") +
         R"("capacity":{"dra.cpu/cpu":{"value":")" + value + "\"" +
         (policy.empty() ? "" : R"(,"requestPolicy":{)" + policy + "}") + "}}";
}
std::string Attrs(int n, const char* value = R"({"int":1})") {
  std::string out = "\"attributes\":{";
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + ("\"a" + std::to_string(i) + "\":") + value;
  return out + "}";
}
std::string Repeat(int n, const std::string& item) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + item;
  return out;
}
std::string Numbered(int n, const std::string& prefix) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + ("\"" + prefix + std::to_string(i) + "\"");
  return out;
}
std::string NodeSpec(const std::string& node_selection) {
  return Obj(Meta(""), Spec(node_selection + R"(,"devices":[])"));
}

struct RuleCase {
  int rule;
  const char* name;
  std::string good;   // passes validation
  std::string bad;    // fails it
  std::string field;  // the failing error's field path
  std::string text;   // part of its body ("Invalid value: ...")
};
void PrintTo(const RuleCase& c, std::ostream* os) { *os << "rule " << c.rule << " " << c.name; }

class RuleTest : public ::testing::TestWithParam<RuleCase> {};

TEST_P(RuleTest, GoodPassesBadFailsWithUpstreamsFieldAndMessage) {
  const RuleCase& c = GetParam();
  EXPECT_THAT(All(Validate(c.good)), IsEmpty()) << c.good;
  const std::vector<FieldError> errors = Validate(c.bad);
  bool found = false;
  for (const FieldError& e : errors) {
    found = found || (e.field == c.field && e.body.find(c.text) != std::string::npos);
  }
  EXPECT_TRUE(found) << "want " << c.field << ": " << c.text << "\ngot:\n" << All(errors);
}

const std::string kNodeName = R"("nodeName":"n1")";
const std::string kSelector =
    R"("nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]})";
const std::string kCounterSet = R"({"name":"set","counters":{"mem":{"value":"4"}}})";
const std::string kConsumes = R"({"counterSet":"set","counters":{"mem":{"value":"1"}}})";
const std::string kRange = R"("default":"2","validRange":{"min":"1","max":"4","step":"1"})";

INSTANTIATE_TEST_SUITE_P(
    Metadata, RuleTest,
    ::testing::Values(
        RuleCase{1, "NameRequired", Obj(Meta(""), Spec(kNodeName)), Obj("", Spec(kNodeName)),
                 "metadata.name", "Required value: name or generateName is required"},
        RuleCase{2, "NameIsSubdomain", Obj(Meta(""), Spec(kNodeName)),
                 Obj(R"("name":"Bad_Name")", Spec(kNodeName)), "metadata.name",
                 "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of"},
        RuleCase{3, "GenerateNamePrefix",
                 Obj(Meta(R"("generateName":"00000-dra.cpu-n1-")"), Spec(kNodeName)),
                 Obj(Meta(R"("generateName":"Bad_-")"), Spec(kNodeName)), "metadata.generateName",
                 "Invalid value: \"Bad_-\": a lowercase RFC 1123 subdomain"},
        RuleCase{4, "NoNamespace", Obj(Meta(""), Spec(kNodeName)),
                 Obj(Meta(R"("namespace":"default")"), Spec(kNodeName)), "metadata.namespace",
                 "Forbidden: not allowed on this type"},
        RuleCase{5, "LabelKeys", Obj(Meta(R"("labels":{"example.com/app":"x"})"), Spec(kNodeName)),
                 Obj(Meta(R"("labels":{"a b":"x"})"), Spec(kNodeName)), "metadata.labels",
                 "Invalid value: \"a b\": name part must consist of alphanumeric characters"},
        RuleCase{5, "LabelValues", Obj(Meta(R"("labels":{"app":"x"})"), Spec(kNodeName)),
                 Obj(Meta(R"("labels":{"app":"-x"})"), Spec(kNodeName)), "metadata.labels",
                 "Invalid value: \"-x\": a valid label must be an empty string"},
        RuleCase{5, "AnnotationKeys", Obj(Meta(R"("annotations":{"a.io/b":"x"})"), Spec(kNodeName)),
                 Obj(Meta(R"("annotations":{"a/b/c":"x"})"), Spec(kNodeName)),
                 "metadata.annotations", "Invalid value: \"a/b/c\": a qualified name"},
        RuleCase{
            6, "OwnerUid",
            Obj(Meta(
                    R"("ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"u"}])"),
                Spec(kNodeName)),
            Obj(Meta(R"("ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1"}])"),
                Spec(kNodeName)),
            "metadata.ownerReferences.uid", "Invalid value: \"\": must not be empty"},
        RuleCase{
            6, "OwnerVersion",
            Obj(Meta(
                    R"("ownerReferences":[{"apiVersion":"apps/v1","kind":"X","name":"x","uid":"u"}])"),
                Spec(kNodeName)),
            Obj(Meta(
                    R"("ownerReferences":[{"apiVersion":"","kind":"Node","name":"n1","uid":"u"}])"),
                Spec(kNodeName)),
            "metadata.ownerReferences.apiVersion", "version must not be empty"},
        RuleCase{
            6, "OneController",
            Obj(Meta(
                    R"("ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"a","uid":"u","controller":true},{"apiVersion":"v1","kind":"Node","name":"b","uid":"v"}])"),
                Spec(kNodeName)),
            Obj(Meta(
                    R"("ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"a","uid":"u","controller":true},{"apiVersion":"v1","kind":"Node","name":"b","uid":"v","controller":true}])"),
                Spec(kNodeName)),
            "metadata.ownerReferences", "Only one reference can have Controller set to true"},
        RuleCase{7, "Finalizers", Obj(Meta(R"("finalizers":["example.com/f"])"), Spec(kNodeName)),
                 Obj(Meta(R"("finalizers":["f"])"), Spec(kNodeName)), "metadata.finalizers",
                 "name is neither a standard finalizer name nor is it fully qualified"}),
    [](const auto& info) { return "Rule" + std::to_string(info.param.rule) + info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Spec, RuleTest,
    ::testing::Values(
        RuleCase{9, "DriverRequired", Slice("n1", "", "s1"),
                 Obj(Meta(""), R"("pool":{"name":"n1","resourceSliceCount":1},"nodeName":"n1")"),
                 "spec.driver", "Required value"},
        RuleCase{9, "DriverTooLong", Slice("n1", "", "s1", "Dra.cpu"),
                 Slice("n1", "", "s1", std::string(60, 'a') + ".com"), "spec.driver",
                 "Too long: must have at most 63 bytes"},
        RuleCase{9, "DriverSubdomain", Slice("n1", "", "s1"), Slice("n1", "", "s1", "dra_cpu"),
                 "spec.driver", "Invalid value: \"dra_cpu\": a lowercase RFC 1123 subdomain"},
        RuleCase{
            10, "PoolNameParts",
            Obj(Meta(""),
                R"("driver":"dra.cpu","nodeName":"n1","pool":{"name":"a/b","resourceSliceCount":1})"),
            Obj(Meta(""),
                R"("driver":"dra.cpu","nodeName":"n1","pool":{"name":"a//b","resourceSliceCount":1})"),
            "spec.pool.name", "Invalid value: \"\": a lowercase RFC 1123 subdomain"},
        RuleCase{
            10, "PoolNameRequired", Slice("n1", "", "s1"),
            Obj(Meta(""), R"("driver":"dra.cpu","nodeName":"n1","pool":{"resourceSliceCount":1})"),
            "spec.pool.name", "Required value"},
        RuleCase{11, "SliceCount", Slice("n1", "", "s1", "dra.cpu", 1, 2),
                 Slice("n1", "", "s1", "dra.cpu", 1, 0), "spec.pool.resourceSliceCount",
                 "Invalid value: 0: must be greater than zero"},
        RuleCase{12, "Generation", Slice("n1", "", "s1", "dra.cpu", 0),
                 Slice("n1", "", "s1", "dra.cpu", -1), "spec.pool.generation",
                 "Invalid value: -1: must be greater than or equal to zero"},
        RuleCase{14, "NodeNameNotEmpty", NodeSpec(kNodeName), NodeSpec(R"("nodeName":"")"),
                 "spec.nodeName",
                 "Invalid value: \"\": must be either unset or set to a non-empty string"},
        RuleCase{14, "NodeNameSubdomain", NodeSpec(kNodeName), NodeSpec(R"("nodeName":"Node_1")"),
                 "spec.nodeName", "Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain"},
        RuleCase{15, "OneSelectorTerm", NodeSpec(kSelector),
                 NodeSpec(R"("nodeSelector":{"nodeSelectorTerms":[{},{}]})"),
                 "spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector term"},
        RuleCase{
            15, "SelectorOperator", NodeSpec(kSelector),
            NodeSpec(
                R"("nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"Near"}]}]})"),
            "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator",
            "Invalid value: \"Near\": not a valid selector operator"},
        RuleCase{
            15, "SelectorValues", NodeSpec(kSelector),
            NodeSpec(
                R"("nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In"}]}]})"),
            "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'"},
        RuleCase{16, "AllNodesTrue", NodeSpec(R"("allNodes":true)"),
                 NodeSpec(R"("allNodes":false)"), "spec.allNodes",
                 "Invalid value: false: must be either unset or set to true"},
        RuleCase{16, "PerDeviceTrue", NodeSpec(R"("perDeviceNodeSelection":true)"),
                 NodeSpec(R"("perDeviceNodeSelection":false)"), "spec.perDeviceNodeSelection",
                 "must be either unset or set to true"},
        RuleCase{17, "NodeSelectionRequired", NodeSpec(R"("allNodes":true)"), Obj(Meta(""), kSpec),
                 "spec",
                 "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                 "`perDeviceNodeSelection` is required"},
        RuleCase{17, "OneNodeSelection", NodeSpec(kNodeName),
                 NodeSpec(kNodeName + R"(,"allNodes":true)"), "spec",
                 "Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of"},
        RuleCase{
            18, "CountersOrDevices",
            Obj(Meta(""), Spec(kNodeName + R"(,"sharedCounters":[)" + kCounterSet + "]")),
            Obj(Meta(""),
                Spec(kNodeName + R"(,"sharedCounters":[)" + kCounterSet + R"(],"devices":[])")),
            "spec", "Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed"},
        RuleCase{19, "MaxDevices", Slice("n1", IndividualDevices(128), "s1"),
                 Slice("n1", IndividualDevices(129), "s1"), "spec.devices",
                 "Too many: 129: must have at most 128 items"},
        RuleCase{19, "MaxDevicesWithTaints",
                 Slice("n1",
                       IndividualDevices(63) +
                           R"(,{"name":"t","taints":[{"key":"k","effect":"NoSchedule"}]})",
                       "s1"),
                 Slice("n1",
                       IndividualDevices(64) +
                           R"(,{"name":"t","taints":[{"key":"k","effect":"NoSchedule"}]})",
                       "s1"),
                 "spec.devices", "Too many: 65: must have at most 64 items"},
        RuleCase{
            19, "MaxDevicesWithLists",
            Slice("n1",
                  IndividualDevices(63) + R"(,{"name":"l","attributes":{"r":{"strings":["a"]}}})",
                  "s1"),
            Slice("n1",
                  IndividualDevices(64) + R"(,{"name":"l","attributes":{"r":{"strings":["a"]}}})",
                  "s1"),
            "spec.devices", "Too many: 65: must have at most 64 items"},
        RuleCase{20, "UniqueDeviceNames", Slice("n1", R"({"name":"cpu0"},{"name":"cpu1"})", "s1"),
                 Slice("n1", R"({"name":"cpu0"},{"name":"cpu0"})", "s1"), "spec.devices[1]",
                 "Duplicate value: \"cpu0\""},
        RuleCase{21, "MaxCounterSets",
                 Obj(Meta(""), Spec(kNodeName + R"(,"sharedCounters":[)" + kCounterSet + "]")),
                 Obj(Meta(""),
                     Spec(kNodeName + R"(,"sharedCounters":[)" + Repeat(9, kCounterSet) + "]")),
                 "spec.sharedCounters", "Too many: 9: must have at most 8 items"},
        RuleCase{21, "UniqueCounterSets",
                 Obj(Meta(""), Spec(kNodeName + R"(,"sharedCounters":[)" + kCounterSet + "]")),
                 Obj(Meta(""),
                     Spec(kNodeName + R"(,"sharedCounters":[)" + Repeat(2, kCounterSet) + "]")),
                 "spec.sharedCounters[1]", "Duplicate value: \"set\""},
        RuleCase{
            22, "PartitionTypeNeedsCounters",
            Obj(Meta(""),
                Spec(
                    kNodeName +
                    R"(,"partitionTypeAttribute":"dra.cpu/kind","devices":[{"name":"d","consumesCounters":[)" +
                    kConsumes + R"(],"attributes":{"kind":{"string":"x"}}}])")),
            Obj(Meta(""),
                Spec(kNodeName +
                     R"(,"partitionTypeAttribute":"dra.cpu/kind","devices":[{"name":"d"}])")),
            "spec.partitionTypeAttribute",
            "may only be set on a slice which declares devices that consume counters"},
        RuleCase{
            22, "PartitionTypeAttributeIsString",
            Obj(Meta(""),
                Spec(
                    kNodeName +
                    R"(,"partitionTypeAttribute":"dra.cpu/kind","devices":[{"name":"d","consumesCounters":[)" +
                    kConsumes + R"(],"attributes":{"dra.cpu/kind":{"string":"x"}}}])")),
            Obj(Meta(""),
                Spec(
                    kNodeName +
                    R"(,"partitionTypeAttribute":"dra.cpu/kind","devices":[{"name":"d","consumesCounters":[)" +
                    kConsumes + R"(],"attributes":{"dra.cpu/kind":{"int":1}}}])")),
            "spec.devices[0].attributes[dra.cpu/kind]", "must be a string value"},
        RuleCase{
            23, "SkipPrepareNeedsUnprepare",
            NodeSpec(kNodeName +
                     R"(,"skipNodeOperations":["NodePrepareResources","NodeUnprepareResources"])"),
            NodeSpec(kNodeName + R"(,"skipNodeOperations":["NodePrepareResources"])"),
            "spec.skipNodeOperations",
            "NodePrepareResources cannot be skipped unless NodeUnprepareResources"}),
    [](const auto& info) { return "Rule" + std::to_string(info.param.rule) + info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    CounterSetsAndDevices, RuleTest,
    ::testing::Values(
        RuleCase{
            24, "CounterSetName",
            Obj(Meta(""), Spec(kNodeName + R"(,"sharedCounters":[)" + kCounterSet + "]")),
            Obj(Meta(""),
                Spec(kNodeName +
                     R"(,"sharedCounters":[{"name":"Set_1","counters":{"a":{"value":"1"}}}])")),
            "spec.sharedCounters[0].name", "Invalid value: \"Set_1\": a lowercase RFC 1123 label"},
        RuleCase{25, "CountersRequired",
                 Obj(Meta(""), Spec(kNodeName + R"(,"sharedCounters":[)" + kCounterSet + "]")),
                 Obj(Meta(""), Spec(kNodeName + R"(,"sharedCounters":[{"name":"set"}])")),
                 "spec.sharedCounters[0].counters", "Required value"},
        RuleCase{
            25, "CounterKeys",
            Obj(Meta(""), Spec(kNodeName + R"(,"sharedCounters":[)" + kCounterSet + "]")),
            Obj(Meta(""),
                Spec(kNodeName +
                     R"(,"sharedCounters":[{"name":"set","counters":{"Mem":{"value":"1"}}}])")),
            "spec.sharedCounters[0].counters", "Invalid value: \"Mem\""},
        RuleCase{26, "DeviceNameLabel", Slice("n1", R"({"name":"cpu-0"})", "s1"),
                 Slice("n1", R"({"name":"CPU_0"})", "s1"), "spec.devices[0].name",
                 "Invalid value: \"CPU_0\": a lowercase RFC 1123 label must consist of"},
        RuleCase{26, "DeviceNameNoDots", Slice("n1", R"({"name":"cpu-0"})", "s1"),
                 Slice("n1", R"({"name":"cpu.0"})", "s1"), "spec.devices[0].name",
                 "Invalid value: \"cpu.0\": must not contain dots"},
        RuleCase{
            27, "AttributesAndCapacities", Dev(Attrs(31) + "," + Cap("4", "", false)),
            Dev(Attrs(32) + "," + Cap("4", "", false)), "spec.devices[0]",
            "Invalid value: 33: the total number of attributes and capacities must not exceed 32"},
        RuleCase{28, "AttributeValues",
                 Dev(Attrs(1, (R"({"strings":[)" + Numbered(48, "v") + "]}").c_str())),
                 Dev(Attrs(1, (R"({"strings":[)" + Numbered(49, "v") + "]}").c_str())),
                 "spec.devices[0]",
                 "Invalid value: 49: the total number of attribute values must not exceed 48"},
        RuleCase{29, "AttributeIdCIdentifier", Dev(R"("attributes":{"dra.cpu/cores":{"int":1}})"),
                 Dev(R"("attributes":{"dra.cpu/1abc":{"int":1}})"), "spec.devices[0].attributes",
                 "Invalid value: \"1abc\": a valid C identifier must start with alphabetic"},
        RuleCase{29, "AttributeIdTooLong",
                 Dev(R"("attributes":{"dra.cpu/)" + std::string(32, 'a') + R"(":{"int":1}})"),
                 Dev(R"("attributes":{"dra.cpu/)" + std::string(33, 'a') + R"(":{"int":1}})"),
                 "spec.devices[0].attributes", "Too long: must have at most 32 bytes"},
        RuleCase{29, "AttributeDomainNotEmpty", Dev(R"("attributes":{"x":{"int":1}})"),
                 Dev(R"("attributes":{"/x":{"int":1}})"), "spec.devices[0].attributes",
                 "Invalid value: \"\": the domain must not be empty"},
        RuleCase{29, "AttributeNameNotEmpty", Dev(R"("attributes":{"a.io/x":{"int":1}})"),
                 Dev(R"("attributes":{"a.io/":{"int":1}})"), "spec.devices[0].attributes",
                 "Invalid value: \"\": the name must not be empty"},
        RuleCase{29, "AttributeOneSlash", Dev(R"("attributes":{"a.io/x":{"int":1}})"),
                 Dev(R"("attributes":{"a.io/b/x":{"int":1}})"), "spec.devices[0].attributes",
                 "Invalid value: \"a.io/b/x\": must not contain more than one slash"},
        RuleCase{29, "CapacityNameDomain", Dev(Cap("4", "", false)),
                 Dev(R"("capacity":{"Dra.Cpu_x/cpu":{"value":"4"}})"), "spec.devices[0].capacity",
                 "Invalid value: \"Dra.Cpu_x\": a lowercase RFC 1123 subdomain"},
        RuleCase{30, "AttributeNeedsAValue", Dev(R"("attributes":{"x":{"bool":true}})"),
                 Dev(R"("attributes":{"x":{}})"), "spec.devices[0].attributes[x]",
                 "Invalid value: \"\": exactly one value must be specified"},
        RuleCase{30, "AttributeOneValue", Dev(R"("attributes":{"x":{"string":"a"}})"),
                 Dev(R"("attributes":{"x":{"int":1,"string":"a"}})"),
                 "spec.devices[0].attributes[x]", "exactly one value must be specified"},
        RuleCase{31, "StringLength",
                 Dev(R"("attributes":{"x":{"string":")" + std::string(64, 'a') + "\"}}"),
                 Dev(R"("attributes":{"x":{"string":")" + std::string(65, 'a') + "\"}}"),
                 "spec.devices[0].attributes[x].string", "Too long: must have at most 64 bytes"},
        RuleCase{31, "Semver", Dev(R"("attributes":{"v":{"version":"1.2.3-rc.1+b.5"}})"),
                 Dev(R"("attributes":{"v":{"version":"1.2"}})"),
                 "spec.devices[0].attributes[v].version",
                 "Invalid value: \"1.2\": must be a string compatible with semver.org spec 2.0.0"},
        RuleCase{32, "ListNotEmpty", Dev(R"("attributes":{"r":{"strings":["pci0000:00"]}})"),
                 Dev(R"("attributes":{"r":{"strings":[]}})"),
                 "spec.devices[0].attributes[r].strings", "must not be empty if specified"},
        RuleCase{32, "ListItemLength", Dev(R"("attributes":{"r":{"strings":["a"]}})"),
                 Dev(R"("attributes":{"r":{"strings":["a",")" + std::string(65, 'b') + "\"]}}"),
                 "spec.devices[0].attributes[r].strings[1]",
                 "Too long: must have at most 64 bytes"},
        RuleCase{32, "ListVersions", Dev(R"("attributes":{"v":{"versions":["1.0.0"]}})"),
                 Dev(R"("attributes":{"v":{"versions":["1.0.0","01.0.0"]}})"),
                 "spec.devices[0].attributes[v].versions[1]", "semver.org"},
        RuleCase{33, "MaxTaints",
                 Dev(R"("taints":[)" + Repeat(16, R"({"key":"k","effect":"None"})") + "]"),
                 Dev(R"("taints":[)" + Repeat(17, R"({"key":"k","effect":"None"})") + "]"),
                 "spec.devices[0].taints", "Too many: 17: must have at most 16 items"},
        RuleCase{33, "TaintEffectRequired", Dev(R"("taints":[{"key":"k","effect":"NoExecute"}])"),
                 Dev(R"("taints":[{"key":"k"}])"), "spec.devices[0].taints[0].effect",
                 "Required value"},
        RuleCase{33, "TaintEffectSupported", Dev(R"("taints":[{"key":"k","effect":"NoSchedule"}])"),
                 Dev(R"("taints":[{"key":"k","effect":"Evict"}])"),
                 "spec.devices[0].taints[0].effect",
                 "Unsupported value: \"Evict\": supported values: \"NoExecute\", \"NoSchedule\", "
                 "\"None\""},
        RuleCase{33, "TaintKey",
                 Dev(R"("taints":[{"key":"example.com/k","value":"v","effect":"None"}])"),
                 Dev(R"("taints":[{"key":"k k","effect":"None"}])"),
                 "spec.devices[0].taints[0].key", "Invalid value: \"k k\""},
        RuleCase{34, "MaxCounterConsumptions", Dev(R"("consumesCounters":[)" + kConsumes + "]"),
                 Dev(R"("consumesCounters":[)" + Repeat(3, kConsumes) + "]"),
                 "spec.devices[0].consumesCounters", "Too many: 3: must have at most 2 items"},
        RuleCase{34, "UniqueCounterSet", Dev(R"("consumesCounters":[)" + kConsumes + "]"),
                 Dev(R"("consumesCounters":[)" + Repeat(2, kConsumes) + "]"),
                 "spec.devices[0].consumesCounters[1]", "Duplicate value: \"set\""},
        RuleCase{34, "CounterSetRequired", Dev(R"("consumesCounters":[)" + kConsumes + "]"),
                 Dev(R"("consumesCounters":[{"counters":{"mem":{"value":"1"}}}])"),
                 "spec.devices[0].consumesCounters[0].counterSet", "Required value"},
        RuleCase{
            35, "CompatibilityGroups",
            Dev(R"("consumesCounters":[{"counterSet":"set","counters":{"m":{"value":"1"}},"compatibilityGroups":["a","b"]}])"),
            Dev(R"("consumesCounters":[{"counterSet":"set","counters":{"m":{"value":"1"}},"compatibilityGroups":["a","a"]}])"),
            "spec.devices[0].consumesCounters[0].compatibilityGroups[1]", "Duplicate value: \"a\""},
        RuleCase{
            36, "PerDeviceNeedsOne",
            Obj(Meta(""),
                Spec(R"("perDeviceNodeSelection":true,"devices":[{"name":"d","nodeName":"n1"}])")),
            Obj(Meta(""), Spec(R"("perDeviceNodeSelection":true,"devices":[{"name":"d"}])")),
            "spec.devices[0]",
            "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required"},
        RuleCase{
            36, "PerDeviceNodeNameNotEmpty",
            Obj(Meta(""),
                Spec(R"("perDeviceNodeSelection":true,"devices":[{"name":"d","allNodes":true}])")),
            Obj(Meta(""),
                Spec(R"("perDeviceNodeSelection":true,"devices":[{"name":"d","nodeName":""}])")),
            "spec.devices[0].nodeName", "Invalid value: \"\": must not be empty"},
        RuleCase{
            37, "DeviceNodeFieldsNeedPerDevice", Dev(""), Dev(R"("nodeName":"n1")"),
            "spec.devices[0]",
            "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if"},
        RuleCase{38, "MaxBindingConditions",
                 Dev(R"("bindingConditions":[)" + Numbered(4, "c") +
                     R"(],"bindingFailureConditions":["f"])"),
                 Dev(R"("bindingConditions":[)" + Numbered(5, "c") +
                     R"(],"bindingFailureConditions":["f"])"),
                 "spec.devices[0].bindingConditions", "Too many: 5: must have at most 4 items"},
        RuleCase{38, "BindingNoOverlap",
                 Dev(R"("bindingConditions":["a"],"bindingFailureConditions":["b"])"),
                 Dev(R"("bindingConditions":["a"],"bindingFailureConditions":["a"])"),
                 "spec.devices[0].bindingFailureConditions[0]",
                 "must not overlap with bindingConditions"},
        RuleCase{38, "BindingNeedsFailure",
                 Dev(R"("bindingConditions":["a"],"bindingFailureConditions":["b"])"),
                 Dev(R"("bindingConditions":["a"])"), "spec.devices[0].bindingFailureConditions",
                 "bindingFailureConditions are required to use bindingConditions"},
        RuleCase{38, "BindingUnique",
                 Dev(R"("bindingConditions":["a","b"],"bindingFailureConditions":["c"])"),
                 Dev(R"("bindingConditions":["a","a"],"bindingFailureConditions":["c"])"),
                 "spec.devices[0].bindingConditions[1]", "Duplicate value: \"a\""}),
    [](const auto& info) { return "Rule" + std::to_string(info.param.rule) + info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Capacity, RuleTest,
    ::testing::Values(
        RuleCase{39, "PolicyNeedsMultipleAllocations", Dev(Cap("4", kRange)),
                 Dev(Cap("4", kRange, false)),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy",
                 "Forbidden: allowMultipleAllocations must be true"},
        RuleCase{40, "OnePolicyKind", Dev(Cap("4", R"("default":"1","validValues":["1","2"])")),
                 Dev(Cap("4", R"("default":"1","validValues":["1"],"validRange":{"min":"1"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy",
                 "Forbidden: exactly one policy can be specified"},
        RuleCase{41, "ValidValuesNeedDefault",
                 Dev(Cap("4", R"("default":"2","validValues":["1","2"])")),
                 Dev(Cap("4", R"("validValues":["1","2"])")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.default",
                 "Required value: required when validValues is defined"},
        RuleCase{42, "ValidRangeNeedsDefault", Dev(Cap("4", kRange)),
                 Dev(Cap("4", R"("validRange":{"min":"1","step":"1"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.default",
                 "Required value: required when validRange is defined"},
        RuleCase{43, "ValidValuesSorted", Dev(Cap("4", R"("default":"2","validValues":["1","2"])")),
                 Dev(Cap("4", R"("default":"2","validValues":["2","1"])")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validValues[1]",
                 "Invalid value: \"1\": values must be sorted in ascending order"},
        RuleCase{44, "MaxValidValues",
                 Dev(Cap("20", R"("default":"10","validValues":[)" + Numbered(10, "1") + "]")),
                 Dev(Cap("200", R"("default":"10","validValues":[)" + Numbered(11, "1") + "]")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validValues",
                 "Too many: 11: must have at most 10 items"},
        RuleCase{44, "UniqueValidValues", Dev(Cap("4", R"("default":"1","validValues":["1","2"])")),
                 Dev(Cap("4", R"("default":"1","validValues":["1","1000m"])")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validValues[1]",
                 "Duplicate value: \"1\""},
        RuleCase{45, "OptionWithinCapacity", Dev(Cap("4", R"("default":"4","validValues":["4"])")),
                 Dev(Cap("4", R"("default":"4","validValues":["4","8"])")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validValues[1]",
                 "Invalid value: \"8\": option is larger than capacity value: 4"},
        RuleCase{46, "DefaultIsAValidValue",
                 Dev(Cap("4", R"("default":"2","validValues":["2","4"])")),
                 Dev(Cap("4", R"("default":"3","validValues":["2","4"])")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validValues",
                 "Invalid value: \"3\": default value is not valid according to the requestPolicy"},
        RuleCase{47, "MinRequired", Dev(Cap("4", R"("default":"1","validRange":{"min":"1"})")),
                 Dev(Cap("4", R"("default":"1","validRange":{"max":"4"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.min",
                 "Required value: required when validRange is defined"},
        RuleCase{48, "MinWithinCapacity",
                 Dev(Cap("1", R"("default":"1","validRange":{"min":"1"})")),
                 Dev(Cap("1", R"("default":"2","validRange":{"min":"2"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.min",
                 "Invalid value: \"2\": min is larger than capacity value: 1"},
        RuleCase{49, "DefaultAtLeastMin",
                 Dev(Cap("4", R"("default":"2","validRange":{"min":"2"})")),
                 Dev(Cap("4", R"("default":"1","validRange":{"min":"2"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.default",
                 "Invalid value: \"1\": default is less than min: 2"},
        RuleCase{50, "MaxAtLeastMin",
                 Dev(Cap("4", R"("default":"2","validRange":{"min":"2","max":"2"})")),
                 Dev(Cap("4", R"("default":"2","validRange":{"min":"2","max":"1"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.max",
                 "Invalid value: \"2\": min is larger than max: 1"},
        RuleCase{50, "MaxWithinCapacity",
                 Dev(Cap("4", R"("default":"4","validRange":{"min":"1","max":"4"})")),
                 Dev(Cap("4", R"("default":"4","validRange":{"min":"1","max":"5"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.max",
                 "Invalid value: \"5\": max is larger than capacity value: 4"},
        RuleCase{50, "DefaultAtMostMax",
                 Dev(Cap("4", R"("default":"3","validRange":{"min":"1","max":"3"})")),
                 Dev(Cap("4", R"("default":"4","validRange":{"min":"1","max":"3"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.default",
                 "Invalid value: \"4\": default is more than max: 3"},
        RuleCase{51, "MilliPrecision",
                 Dev(Cap("4", R"("default":"1500m","validRange":{"min":"500m","step":"500m"})")),
                 Dev(Cap("4", R"("default":"1500u","validRange":{"min":"500m","step":"500m"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.default",
                 "Invalid value: \"1500u\": value cannot be represented as a milli value"},
        RuleCase{52, "StepPositive",
                 Dev(Cap("4", R"("default":"1","validRange":{"min":"1","step":"1"})")),
                 Dev(Cap("4", R"("default":"1","validRange":{"min":"1","step":"0"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.step",
                 "Invalid value: \"0\": must be greater than zero"},
        RuleCase{53, "OneStepWithinCapacity",
                 Dev(Cap("1", R"("default":"1","validRange":{"min":"1","max":"1"})")),
                 Dev(Cap("1", R"("default":"1","validRange":{"min":"1","step":"1"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.step",
                 "Invalid value: \"1\": one step 2 is larger than capacity value: 1"},
        RuleCase{53, "OddCapacityWholeCores",
                 Dev(Cap("7", R"("default":"6","validRange":{"min":"2","max":"6","step":"2"})")),
                 Dev(Cap("2", R"("default":"2","validRange":{"min":"2","step":"2"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.step",
                 "one step 4 is larger than capacity value: 2"},
        RuleCase{54, "BoundsNotNegative",
                 Dev(Cap("4", R"("default":"0","validRange":{"min":"0","step":"1"})")),
                 Dev(Cap("4", R"("default":"0","validRange":{"min":"-1","step":"1"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.min",
                 "Invalid value: \"-1\": must be greater than or equal to 0"},
        RuleCase{54, "BoundsWithinInt64",
                 Dev(Cap("2e19", R"("default":"1","validRange":{"min":"1","step":"1"})")),
                 Dev(Cap("2e19", R"("default":"1","validRange":{"min":"1","step":"1e19"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.step",
                 "must not be larger than 9223372036854775807"},
        RuleCase{55, "DefaultOnAStep",
                 Dev(Cap("8", R"("default":"4","validRange":{"min":"2","step":"2"})")),
                 Dev(Cap("8", R"("default":"3","validRange":{"min":"2","step":"2"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.step",
                 "Invalid value: \"3\": value is not a multiple of a given step (2) from (2)"},
        RuleCase{55, "MaxOnAStep",
                 Dev(Cap("8", R"("default":"2","validRange":{"min":"2","max":"8","step":"2"})")),
                 Dev(Cap("8", R"("default":"2","validRange":{"min":"2","max":"7","step":"2"})")),
                 "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.validRange.step",
                 "Invalid value: \"7\": value is not a multiple of a given step (2) from (2)"}),
    [](const auto& info) { return "Rule" + std::to_string(info.param.rule) + info.param.name; });

const std::string kMapping =
    Cap("4", "", false) +
    R"(,"nodeAllocatableResources":{"cpu":{"mapping":{"capacityKey":"dra.cpu/cpu","capacityMultiplier":"1"}}})";

INSTANTIATE_TEST_SUITE_P(
    NodeAllocatable, RuleTest,
    ::testing::Values(
        RuleCase{56, "ResourceName", Dev(kMapping),
                 Dev(R"("nodeAllocatableResources":{"gpu":{"mapping":{"deviceMultiplier":"1"}}})"),
                 "spec.devices[0].nodeAllocatableResources[gpu]",
                 "Invalid value: \"gpu\": must be a node allocatable resource name"},
        RuleCase{57, "MappingOrOverhead",
                 Dev(R"("nodeAllocatableResources":{"memory":{"overhead":{"perPod":"1Mi"}}})"),
                 Dev(R"("nodeAllocatableResources":{"cpu":{}})"),
                 "spec.devices[0].nodeAllocatableResources[cpu]",
                 "Required value: at least one of mapping or overhead must be set"},
        RuleCase{
            58, "CapacityKeyIsACapacity", Dev(kMapping),
            Dev(R"("nodeAllocatableResources":{"cpu":{"mapping":{"capacityKey":"dra.cpu/cpu","capacityMultiplier":"1"}}})"),
            "spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityKey",
            "Not found: \"dra.cpu/cpu\""},
        RuleCase{
            58, "MultiplierWithKey", Dev(kMapping),
            Dev(Cap("4", "", false) +
                R"(,"nodeAllocatableResources":{"cpu":{"mapping":{"capacityKey":"dra.cpu/cpu"}}})"),
            "spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityMultiplier",
            "Required value: capacityMultiplier is required when capacityKey is set"},
        RuleCase{58, "MultiplierPositive",
                 Dev(R"("nodeAllocatableResources":{"cpu":{"mapping":{"deviceMultiplier":"1"}}})"),
                 Dev(R"("nodeAllocatableResources":{"cpu":{"mapping":{"deviceMultiplier":"0"}}})"),
                 "spec.devices[0].nodeAllocatableResources[cpu].mapping.deviceMultiplier",
                 "Invalid value: \"0\": must be positive"},
        RuleCase{
            59, "KeyOrDeviceMultiplier", Dev(kMapping),
            Dev(Cap("4", "", false) +
                R"(,"nodeAllocatableResources":{"cpu":{"mapping":{"capacityKey":"dra.cpu/cpu","capacityMultiplier":"1","deviceMultiplier":"1"}}})"),
            "spec.devices[0].nodeAllocatableResources[cpu].mapping",
            "exactly one of: `capacityKey`, `deviceMultiplier`"},
        RuleCase{60, "OverheadSet",
                 Dev(R"("nodeAllocatableResources":{"cpu":{"overhead":{"perContainer":"100m"}}})"),
                 Dev(R"("nodeAllocatableResources":{"cpu":{"overhead":{}}})"),
                 "spec.devices[0].nodeAllocatableResources[cpu].overhead",
                 "at least one of perPod or perContainer must be set"},
        RuleCase{60, "OverheadNotNegative",
                 Dev(R"("nodeAllocatableResources":{"cpu":{"overhead":{"perPod":"0"}}})"),
                 Dev(R"("nodeAllocatableResources":{"cpu":{"overhead":{"perPod":"-1"}}})"),
                 "spec.devices[0].nodeAllocatableResources[cpu].overhead.perPod",
                 "Invalid value: \"-1\": must be non-negative"}),
    [](const auto& info) { return "Rule" + std::to_string(info.param.rule) + info.param.name; });

TEST(ValidationTest, DracpuShapedSlicesAreValid) {
  EXPECT_THAT(
      All(Validate(Slice("node-1", GroupedDevice(0, 32) + "," + GroupedDevice(1, 32), "s1"))),
      IsEmpty());
  EXPECT_THAT(All(Validate(Slice("node-1", IndividualDevices(128), "s1"))), IsEmpty());
  EXPECT_THAT(All(Validate(Slice("node-1", "", "s1"))), IsEmpty()) << "an empty pool is allowed";
}

TEST(ValidationTest, Rules8And13ImmutableFieldsAndResourceVersionOnUpdate) {
  auto with_rv = [](std::string slice) {
    slice.replace(slice.find("{\"name\":\"s\"}"), 12,
                  "{\"name\":\"s\",\"resourceVersion\":\"7\",\"uid\":\"u1\"}");
    return slice;
  };
  const std::string old_slice = with_rv(Slice("n1", "", "s"));
  EXPECT_THAT(All(Validate(with_rv(Slice("n1", "", "s", "dra.cpu", 2)), old_slice)), IsEmpty());
  const std::string errors = All(Validate(with_rv(Slice("n2", "", "s", "dra.other")), old_slice));
  EXPECT_THAT(errors, HasSubstr("spec.nodeName: Invalid value: \"n2\": field is immutable"));
  EXPECT_THAT(errors, HasSubstr("spec.pool.name: Invalid value: \"n2\": field is immutable"));
  EXPECT_THAT(errors, HasSubstr("spec.driver: Invalid value: \"dra.other\": field is immutable"));
  EXPECT_THAT(All(Validate(Slice("n1", "", "s"), old_slice)),
              HasSubstr("metadata.resourceVersion: Invalid value: 0x0: must be specified for an "
                        "update"));
  std::string other_uid = with_rv(Slice("n1", "", "s"));
  other_uid.replace(other_uid.find("\"u1\""), 4, "\"u2\"");
  EXPECT_THAT(All(Validate(other_uid, old_slice)),
              HasSubstr("metadata.uid: Invalid value: \"u2\": field is immutable"));
}

TEST(ValidationTest, CapacityAndTaintsAreOnlyValidatedWhenChanged) {
  // A stored device whose policy is no longer valid under today's rules (ratcheting).
  const std::string bad = Dev(Cap("1", R"("default":"1","validRange":{"min":"1","step":"1"})"));
  auto with_rv = [](std::string slice) {
    slice.replace(slice.find("{\"name\":\"s1\"}"), 13,
                  "{\"name\":\"s1\",\"resourceVersion\":\"7\"}");
    return slice;
  };
  EXPECT_THAT(All(Validate(with_rv(bad), with_rv(bad))), IsEmpty());
  // The same value written as 1000m is semantically unchanged.
  const std::string same =
      Dev(Cap("1000m", R"("default":"1","validRange":{"min":"1","step":"1"})"));
  EXPECT_THAT(All(Validate(with_rv(same), with_rv(bad))), IsEmpty());
  EXPECT_THAT(All(Validate(with_rv(bad))), HasSubstr("one step 2 is larger than capacity value"));
}

TEST(ValidationTest, FractionalRangesNeedTheGate) {
  // Without DRAFractionalCapacityRange the integer path rounds up: min and step 1500m read as 2,
  // so a default of 3 is off the step; with the gate, 3 = 1.5 + 1.5 is on it.
  const FeatureGates old = *FeatureGates::ForVersion("1.36");
  const std::string frac =
      Dev(Cap("4", R"("default":"3","validRange":{"min":"1500m","step":"1500m"})"));
  EXPECT_THAT(All(Validate(frac, "", old)), HasSubstr("value is not a multiple of a given step"));
  EXPECT_THAT(All(Validate(frac)), IsEmpty());
}

TEST(ValidationTest, NameRules) {
  EXPECT_THAT(IsDns1123Label("cpudevnuma000"), IsEmpty());
  EXPECT_THAT(IsDns1123Label("-a"), ::testing::SizeIs(1));
  EXPECT_THAT(IsDns1123Label("a.b"), ::testing::ElementsAre("must not contain dots"));
  EXPECT_THAT(IsDns1123Subdomain("00000-dra.cpu-node1-x7k2p"), IsEmpty());
  EXPECT_THAT(IsDns1123Subdomain("a..b"), ::testing::SizeIs(1));
  EXPECT_THAT(IsCIdentifier("numaNode"), IsEmpty());
  EXPECT_THAT(IsQualifiedName("example.com/MyName"), IsEmpty());
  EXPECT_TRUE(IsSemver("1.2.3-rc.1+build.5"));
  EXPECT_FALSE(IsSemver("01.2.3"));
  EXPECT_FALSE(IsSemver("1.2.3-01"));
}

}  // namespace
}  // namespace dracpu::sim
