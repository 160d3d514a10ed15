// SimState without HTTP: the API semantics the simulator promises (status codes, Status bodies,
// resourceVersions, selectors, history and faults).
#include "tests/sim/apiserver/sim_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/sim/apiserver/slice_fixtures.h"

namespace dracpu::sim {
namespace {

using testing::GroupedDevice;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using testing::Slice;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

rapidjson::Document Parse(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  EXPECT_FALSE(doc.HasParseError()) << json;
  return doc;
}

std::string Str(const rapidjson::Value& v, const char* a, const char* b = nullptr) {
  const rapidjson::Value* x = &v[a];
  if (b != nullptr) x = &(*x)[b];
  return x->GetString();
}

SimResponse Do(SimState& s, const std::string& method, const std::string& target,
               const std::string& body = "") {
  return s.Handle({method, target, "", body});
}

TEST(SimStateTest, CreateWithGenerateNameSetsServerFields) {
  SimState s;
  SimResponse r = Do(s, "POST", kSlices, Slice("n1", GroupedDevice(0, 8)));
  ASSERT_EQ(r.status, 201) << r.body;
  rapidjson::Document doc = Parse(r.body);
  const std::string name = Str(doc, "metadata", "name");
  EXPECT_EQ(name.rfind("00000-dra.cpu-n1-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("00000-dra.cpu-n1-").size() + 5);
  EXPECT_FALSE(Str(doc, "metadata", "uid").empty());
  EXPECT_EQ(Str(doc, "metadata", "resourceVersion"), std::to_string(s.resource_version()));
  EXPECT_EQ(doc["metadata"]["generation"].GetInt(), 1);
  EXPECT_THAT(s.ResourceSlices(), SizeIs(1));
}

TEST(SimStateTest, InvalidSliceIs422WithACauseNamingTheField) {
  SimState s;
  SimResponse r =
      Do(s, "POST", kSlices,
         Slice("n1", "{\"name\":\"d\",\"attributes\":{\"x\":{\"int\":1,\"bool\":true}}}", "s1"));
  ASSERT_EQ(r.status, 422);
  rapidjson::Document doc = Parse(r.body);
  EXPECT_EQ(Str(doc, "kind"), "Status");
  EXPECT_EQ(Str(doc, "reason"), "Invalid");
  EXPECT_EQ(doc["code"].GetInt(), 422);
  EXPECT_THAT(Str(doc, "message"), HasSubstr("ResourceSlice.resource.k8s.io \"s1\" is invalid: "
                                             "spec.devices[0].attributes[x]: Invalid value"));
  EXPECT_EQ(std::string(doc["details"]["causes"][0]["field"].GetString()),
            "spec.devices[0].attributes[x]");
  EXPECT_THAT(s.ResourceSlices(), SizeIs(0));
}

TEST(SimStateTest, UnknownFieldsAreDroppedWithAWarningOrRefusedWhenStrict) {
  SimState s;
  std::string slice = Slice("n1", GroupedDevice(0, 4), "s1");
  // An unknown device field and an unknown top-level spec field. (A typo in
  // allowMultipleAllocations would also drop it, and the requestPolicy left behind is then
  // refused: 422, as upstream.)
  slice.replace(slice.find("\"allowMultipleAllocations\""), 26,
                "\"shape\":\"round\",\"allowMultipleAllocations\"");
  slice.replace(slice.find("\"driver\""), 8, "\"colour\":\"red\",\"driver\"");
  SimResponse strict = Do(s, "POST", std::string(kSlices) + "?fieldValidation=Strict", slice);
  EXPECT_EQ(strict.status, 400);
  EXPECT_THAT(strict.body, HasSubstr("strict decoding error: unknown field \\\"spec.colour\\\""));
  EXPECT_THAT(strict.body, HasSubstr("spec.devices[0].shape"));
  SimResponse lenient = Do(s, "POST", kSlices, slice);
  ASSERT_EQ(lenient.status, 201) << lenient.body;
  EXPECT_THAT(lenient.warnings, ::testing::ElementsAre("unknown field \"spec.colour\"",
                                                       "unknown field \"spec.devices[0].shape\""));
  EXPECT_THAT(lenient.body, ::testing::Not(HasSubstr("colour")));
  EXPECT_THAT(s.Warnings(), SizeIs(2));
}

SimState AtVersion(const char* version, const char* gates = "") {
  SimState::Options o;
  o.gates = *FeatureGates::ForVersion(version);
  EXPECT_TRUE(o.gates.Set(gates).ok());
  return SimState(o);
}

TEST(SimStateTest, DisabledGateFieldsAreDroppedSilentlyThenValidated) {
  // 1.34: consumable capacity off. The policy and allowMultipleAllocations go, the rest is kept.
  SimState old = AtVersion("1.34");
  SimResponse r = Do(old, "POST", kSlices, Slice("n1", GroupedDevice(0, 8), "s1"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_THAT(r.warnings, ::testing::IsEmpty()) << "a disabled gate drops without a warning";
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("requestPolicy")));
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("allowMultipleAllocations")));
  EXPECT_THAT(old.DroppedFields(),
              ::testing::ElementsAre("spec.devices[0].allowMultipleAllocations",
                                     "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy"));
  // 1.36: list attributes off. The value goes and the empty attribute is refused.
  SimState now = AtVersion("1.36");
  const std::string list_device =
      "{\"name\":\"d\",\"attributes\":{\"resource.kubernetes.io/pcieRoot\":{\"strings\":"
      "[\"pci0000:00\"]}}}";
  SimResponse refused = Do(now, "POST", kSlices, Slice("n1", list_device, "s1"));
  EXPECT_EQ(refused.status, 422);
  EXPECT_THAT(refused.body,
              HasSubstr("spec.devices[0].attributes[resource.kubernetes.io/pcieRoot]: Invalid "
                        "value: \\\"\\\": exactly one value must be specified"));
  EXPECT_THAT(now.Rejections(), SizeIs(1));
  // The same server with the gate turned on keeps it.
  now.SetFeatureGates(*FeatureGates::ForVersion("1.36"));
  FeatureGates on = now.feature_gates();
  on.SetEnabled(Gate::kListTypeAttributes, true);
  now.SetFeatureGates(on);
  EXPECT_EQ(Do(now, "POST", kSlices, Slice("n1", list_device, "s1")).status, 201);
}

TEST(SimStateTest, DryRunRunsEverythingAndStoresNothing) {
  SimState s = AtVersion("1.34");
  const int64_t rv = s.resource_version();
  SimResponse r =
      Do(s, "POST", std::string(kSlices) + "?dryRun=All", Slice("n1", GroupedDevice(0, 8)));
  ASSERT_EQ(r.status, 201) << r.body;
  rapidjson::Document doc = Parse(r.body);
  EXPECT_EQ(Str(doc, "metadata", "name").rfind("00000-dra.cpu-n1-", 0), 0u);
  EXPECT_FALSE(doc["metadata"].HasMember("resourceVersion"));
  EXPECT_FALSE(doc["spec"]["devices"][0].HasMember("allowMultipleAllocations"));
  EXPECT_THAT(s.ResourceSlices(), SizeIs(0));
  EXPECT_EQ(s.resource_version(), rv);
  EXPECT_EQ(Do(s, "POST", std::string(kSlices) + "?dryRun=Some", Slice("n1", "")).status, 400);
  // A refused dry run is a 422 like a real write.
  EXPECT_EQ(Do(s, "POST", std::string(kSlices) + "?dryRun=All", Slice("n1", "", "Bad_Name")).status,
            422);
}

TEST(SimStateTest, DecodeErrorsAre400) {
  SimState s;
  SimResponse r = Do(s, "POST", kSlices,
                     Slice("n1", "{\"name\":\"d\",\"capacity\":{\"c\":{\"value\":\"lots\"}}}"));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("cannot be handled as a ResourceSlice: quantities must match"));
}

TEST(SimStateTest, VersionAndGatesAreServedAndSettable) {
  SimState s = AtVersion("1.35");
  EXPECT_THAT(Do(s, "GET", "/version").body, HasSubstr("\"minor\":\"35\""));
  EXPECT_EQ(Do(s, "POST", "/_sim/feature-gates",
               "{\"version\":\"1.37\",\"featureGates\":\"DRAListTypeAttributes=true\"}")
                .status,
            200);
  EXPECT_THAT(Do(s, "GET", "/version").body, HasSubstr("v1.37.0"));
  EXPECT_THAT(Do(s, "GET", "/_sim/feature-gates").body, HasSubstr("DRAListTypeAttributes=true"));
  EXPECT_EQ(Do(s, "POST", "/_sim/feature-gates", "{\"version\":\"1.20\"}").status, 400);
  EXPECT_EQ(Do(s, "POST", "/_sim/feature-gates", "{\"featureGates\":\"Nope=true\"}").status, 400);
}

TEST(SimStateTest, OwnerReferencesAreValidated) {
  SimState s;
  std::string slice = Slice("n1", "", "s1");
  slice.replace(slice.find("{\"name\":\"s1\"}"), 13,
                "{\"name\":\"s1\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\","
                "\"name\":\"n1\",\"controller\":true}]}");
  SimResponse r = Do(s, "POST", kSlices, slice);
  EXPECT_EQ(r.status, 422);
  // Upstream validates each reference on the list's path, without an index.
  EXPECT_THAT(
      r.body,
      HasSubstr("metadata.ownerReferences.uid: Invalid value: \\\"\\\": must not be empty"));
}

TEST(SimStateTest, UpdateNeedsTheCurrentResourceVersion) {
  SimState s;
  SimResponse created = Do(s, "POST", kSlices, Slice("n1", "", "s1"));
  ASSERT_EQ(created.status, 201);
  rapidjson::Document doc = Parse(created.body);
  const std::string rv = Str(doc, "metadata", "resourceVersion");
  SimResponse ok =
      Do(s, "PUT", std::string(kSlices) + "/s1", Slice("n1", GroupedDevice(0, 4), "s1"));
  // Without a resourceVersion: 422, as the real server.
  EXPECT_EQ(ok.status, 422) << ok.body;
  std::string with_rv = Slice("n1", GroupedDevice(0, 4), "s1");
  with_rv.replace(with_rv.find("{\"name\":\"s1\"}"), 13,
                  "{\"name\":\"s1\",\"resourceVersion\":\"" + rv + "\"}");
  SimResponse updated = Do(s, "PUT", std::string(kSlices) + "/s1", with_rv);
  ASSERT_EQ(updated.status, 200) << updated.body;
  rapidjson::Document after = Parse(updated.body);
  EXPECT_EQ(Str(after, "metadata", "uid"), Str(doc, "metadata", "uid"));
  EXPECT_EQ(after["metadata"]["generation"].GetInt(), 2);
  // The same (now stale) version again: 409 Conflict.
  SimResponse stale = Do(s, "PUT", std::string(kSlices) + "/s1", with_rv);
  EXPECT_EQ(stale.status, 409);
  EXPECT_THAT(stale.body, HasSubstr("\"reason\":\"Conflict\""));
  EXPECT_THAT(stale.body, HasSubstr("the object has been modified"));
}

TEST(SimStateTest, DeletePreconditions) {
  SimState s;
  rapidjson::Document doc = Parse(Do(s, "POST", kSlices, Slice("n1", "", "s1")).body);
  const std::string uid = Str(doc, "metadata", "uid");
  SimResponse wrong =
      Do(s, "DELETE", std::string(kSlices) + "/s1", "{\"preconditions\":{\"uid\":\"other\"}}");
  EXPECT_EQ(wrong.status, 409);
  EXPECT_THAT(wrong.body, HasSubstr("Precondition failed: UID in precondition: other"));
  EXPECT_EQ(
      Do(s, "DELETE", std::string(kSlices) + "/s1", "{\"preconditions\":{\"uid\":\"" + uid + "\"}}")
          .status,
      200);
  SimResponse gone = Do(s, "DELETE", std::string(kSlices) + "/s1");
  EXPECT_EQ(gone.status, 404);
  EXPECT_THAT(gone.body, HasSubstr("\"reason\":\"NotFound\""));
}

TEST(SimStateTest, DuplicateNameIsAlreadyExists) {
  SimState s;
  ASSERT_EQ(Do(s, "POST", kSlices, Slice("n1", "", "s1")).status, 201);
  SimResponse again = Do(s, "POST", kSlices, Slice("n1", "", "s1"));
  EXPECT_EQ(again.status, 409);
  EXPECT_THAT(again.body, HasSubstr("\"reason\":\"AlreadyExists\""));
}

TEST(SimStateTest, ListFiltersByFieldSelector) {
  SimState s;
  ASSERT_EQ(Do(s, "POST", kSlices, Slice("n1", "", "a")).status, 201);
  ASSERT_EQ(Do(s, "POST", kSlices, Slice("n2", "", "b")).status, 201);
  ASSERT_EQ(Do(s, "POST", kSlices, Slice("n1", "", "c", "other.example.com")).status, 201);
  SimResponse r = Do(
      s, "GET", std::string(kSlices) + "?fieldSelector=spec.nodeName%3Dn1%2Cspec.driver%3Ddra.cpu");
  ASSERT_EQ(r.status, 200);
  rapidjson::Document doc = Parse(r.body);
  ASSERT_EQ(doc["items"].Size(), 1u);
  EXPECT_EQ(Str(doc["items"][0], "metadata", "name"), "a");
  EXPECT_EQ(Str(doc, "metadata", "resourceVersion"), std::to_string(s.resource_version()));
  EXPECT_EQ(
      Parse(Do(s, "GET", std::string(kSlices) + "?fieldSelector=spec.nodeName!%3Dn1").body)["items"]
          .Size(),
      1u);
  EXPECT_EQ(Do(s, "GET", std::string(kSlices) + "?fieldSelector=spec.color%3Dred").status, 400);
}

TEST(SimStateTest, NodesClaimsAndVersion) {
  SimState s;
  const std::string uid = s.AddNode("n1");
  SimResponse node = Do(s, "GET", "/api/v1/nodes/n1");
  ASSERT_EQ(node.status, 200);
  EXPECT_EQ(Str(Parse(node.body), "metadata", "uid"), uid);
  EXPECT_EQ(Do(s, "GET", "/api/v1/nodes/n2").status, 404);
  ASSERT_TRUE(s.PutResourceClaim(
      "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\"},\"spec\":{\"devices\":{}}}"));
  SimResponse claim = Do(s, "GET", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c");
  ASSERT_EQ(claim.status, 200);
  EXPECT_FALSE(Str(Parse(claim.body), "metadata", "uid").empty());
  EXPECT_EQ(Do(s, "GET", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/x").status, 404);
  EXPECT_THAT(Do(s, "GET", "/version").body, HasSubstr("gitVersion"));
}

TEST(SimStateTest, TokenCheck) {
  SimState s;
  EXPECT_FALSE(s.CheckAuth({"GET", "/version", "", ""}).has_value());
  s.SetToken("secret");
  std::optional<SimResponse> denied = s.CheckAuth({"GET", "/version", "Bearer nope", ""});
  ASSERT_TRUE(denied.has_value());
  EXPECT_EQ(denied->status, 401);
  EXPECT_FALSE(s.CheckAuth({"GET", "/version", "Bearer secret", ""}).has_value());
  EXPECT_FALSE(s.CheckAuth({"POST", "/_sim/compact", "", ""}).has_value());
}

TEST(SimStateTest, FaultsMatchAndRunOut) {
  SimState s;
  Fault f;
  f.method = "PUT";
  f.path_prefix = kSlices;
  f.status = 409;
  f.reason = "Conflict";
  f.count = 2;
  s.AddFault(f);
  EXPECT_FALSE(s.TakeFault("GET", std::string(kSlices) + "/a").has_value());
  EXPECT_TRUE(s.TakeFault("PUT", std::string(kSlices) + "/a").has_value());
  EXPECT_TRUE(s.TakeFault("PUT", std::string(kSlices) + "/b").has_value());
  EXPECT_FALSE(s.TakeFault("PUT", std::string(kSlices) + "/c").has_value());
  Fault watch_only;
  watch_only.query_contains = "watch=true";
  watch_only.count = -1;
  s.AddFault(watch_only);
  EXPECT_FALSE(s.TakeFault("GET", kSlices).has_value());
  EXPECT_TRUE(s.TakeFault("GET", std::string(kSlices) + "?watch=true").has_value());
  EXPECT_TRUE(s.TakeFault("GET", std::string(kSlices) + "?watch=true").has_value());
  s.ClearFaults();
  EXPECT_FALSE(s.TakeFault("GET", std::string(kSlices) + "?watch=true").has_value());
}

TEST(SimStateTest, WatchFromACompactedVersionExpires) {
  SimState::Options options;
  options.history_size = 2;
  SimState s(options);
  const int64_t start = s.resource_version();
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_EQ(Do(s, "POST", kSlices, Slice("n1", "", name)).status, 201);
  }
  // Three events, two kept: resuming from the start misses "a".
  SimState::WatchStart w =
      s.StartWatch(std::string(kSlices) + "?watch=true&resourceVersion=" + std::to_string(start));
  EXPECT_TRUE(w.expired);
  SimState::WatchStart ok = s.StartWatch(
      std::string(kSlices) + "?watch=true&resourceVersion=" + std::to_string(start + 1));
  EXPECT_FALSE(ok.expired);
  s.CompactHistory();
  EXPECT_TRUE(s.StartWatch(std::string(kSlices) +
                           "?watch=true&resourceVersion=" + std::to_string(start + 2))
                  .expired);
  EXPECT_FALSE(s.StartWatch(std::string(kSlices) +
                            "?watch=true&resourceVersion=" + std::to_string(s.resource_version()))
                   .expired);
  SimState::WatchStart fresh = s.StartWatch(std::string(kSlices) + "?watch=true");
  EXPECT_THAT(fresh.initial, SizeIs(3)) << "a watch without a version starts with ADDED for all";
}

TEST(SimStateTest, WaitForEventsDeliversInOrderAndFilters) {
  SimState s;
  std::vector<SelectorTerm> selector;
  ASSERT_TRUE(ParseFieldSelector("spec.nodeName=n1", &selector));
  int64_t after = s.resource_version();
  uint64_t expire = 0, bookmark = 0;
  ASSERT_EQ(Do(s, "POST", kSlices, Slice("n1", "", "a")).status, 201);
  ASSERT_EQ(Do(s, "POST", kSlices, Slice("n2", "", "b")).status, 201);
  ASSERT_TRUE(s.DeleteResourceSlice("a"));
  SimState::WatchWake wake =
      s.WaitForEvents(selector, &after, &expire, &bookmark, 0, std::chrono::steady_clock::now());
  ASSERT_THAT(wake.events, SizeIs(2));
  EXPECT_EQ(wake.events[0].type, "ADDED");
  EXPECT_EQ(wake.events[1].type, "DELETED");
  EXPECT_EQ(after, s.resource_version());
  s.RequestBookmarks();
  EXPECT_TRUE(s.WaitForEvents(selector, &after, &expire, &bookmark, 0,
                              std::chrono::steady_clock::now() + std::chrono::seconds(10))
                  .bookmark);
  s.ExpireWatches();
  EXPECT_TRUE(s.WaitForEvents(selector, &after, &expire, &bookmark, 0,
                              std::chrono::steady_clock::now() + std::chrono::seconds(10))
                  .expired);
  s.DropWatches();
  EXPECT_TRUE(s.WaitForEvents(selector, &after, &expire, &bookmark, 0,
                              std::chrono::steady_clock::now() + std::chrono::seconds(10))
                  .dropped);
}

}  // namespace
}  // namespace dracpu::sim
