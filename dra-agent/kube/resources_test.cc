#include "dra-agent/kube/resources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/kube_client.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::kube {
namespace {

using ::testing::HasSubstr;

TEST(ResourcesTest, Paths) {
  EXPECT_EQ(ResourceSlicePath("00000-dra.cpu-n1-abcde"),
            "/apis/resource.k8s.io/v1/resourceslices/00000-dra.cpu-n1-abcde");
  EXPECT_EQ(ResourceClaimPath("default", "c1"),
            "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1");
  EXPECT_EQ(NodePath("node-1"), "/api/v1/nodes/node-1");
  EXPECT_EQ(UrlEncode("spec.nodeName=n1,spec.driver=dra.cpu"),
            "spec.nodeName%3Dn1%2Cspec.driver%3Ddra.cpu");
}

struct CallCase {
  const char* method;
  const char* target;
  ApiCall want;
};

class ApiCallForTest : public ::testing::TestWithParam<CallCase> {};

TEST_P(ApiCallForTest, MapsRequestsToRbacVerbs) {
  EXPECT_EQ(ApiCallFor(GetParam().method, GetParam().target), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ApiCallForTest,
    ::testing::Values(CallCase{"GET", "/version", {"", "", "get", "/version"}},
                      CallCase{"GET", "/api/v1/nodes/n1", {"", "nodes", "get", ""}},
                      CallCase{"GET",
                               "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=x",
                               {"resource.k8s.io", "resourceslices", "list", ""}},
                      CallCase{"GET",
                               "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=x&watch=true",
                               {"resource.k8s.io", "resourceslices", "watch", ""}},
                      CallCase{"POST",
                               "/apis/resource.k8s.io/v1/resourceslices",
                               {"resource.k8s.io", "resourceslices", "create", ""}},
                      CallCase{"PUT",
                               "/apis/resource.k8s.io/v1/resourceslices/s1",
                               {"resource.k8s.io", "resourceslices", "update", ""}},
                      CallCase{"DELETE",
                               "/apis/resource.k8s.io/v1/resourceslices/s1",
                               {"resource.k8s.io", "resourceslices", "delete", ""}},
                      CallCase{"DELETE",
                               "/apis/resource.k8s.io/v1/resourceslices",
                               {"resource.k8s.io", "resourceslices", "deletecollection", ""}},
                      CallCase{"GET",
                               "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c",
                               {"resource.k8s.io", "resourceclaims", "get", ""}},
                      CallCase{"PUT",
                               "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status",
                               {"resource.k8s.io", "resourceclaims/status", "update", ""}}));

TEST(ResourcesTest, ApiCallsUsedCoversTheReferenceRbacNeeds) {
  const std::vector<ApiCall> calls = ApiCallsUsed();
  for (const char* verb : {"get", "list", "watch", "create", "update", "delete"}) {
    EXPECT_THAT(calls, ::testing::Contains(ApiCall{"resource.k8s.io", "resourceslices", verb, ""}))
        << verb;
  }
  EXPECT_THAT(calls, ::testing::Contains(ApiCall{"", "nodes", "get", ""}));
  EXPECT_THAT(calls, ::testing::Contains(ApiCall{"resource.k8s.io", "resourceclaims", "get", ""}));
}

struct ErrorCase {
  int http;
  const char* body;
  StatusCode want;
  const char* want_text;
};

class ApiErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ApiErrorTest, MapsStatusCodesAndKeepsReasonAndMessage) {
  const ErrorCase& c = GetParam();
  EXPECT_THAT(ApiErrorStatus("PUT", "/x", c.http, c.body),
              StatusIs(c.want, HasSubstr(c.want_text)));
}

#define K8S_STATUS(code, reason, msg)                                                    \
  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"" msg \
  "\",\"reason\":\"" reason "\",\"code\":" #code "}"

INSTANTIATE_TEST_SUITE_P(
    Table, ApiErrorTest,
    ::testing::Values(
        ErrorCase{409, K8S_STATUS(409, "Conflict", "the object has been modified"),
                  StatusCode::kAborted, "PUT /x: HTTP 409 Conflict: the object has been modified"},
        ErrorCase{409, K8S_STATUS(409, "AlreadyExists", "exists"), StatusCode::kAlreadyExists,
                  "HTTP 409 AlreadyExists: exists"},
        ErrorCase{410, K8S_STATUS(410, "Expired", "too old"), StatusCode::kOutOfRange,
                  "HTTP 410 Expired"},
        ErrorCase{422, K8S_STATUS(422, "Invalid", "spec.devices: Too many"),
                  StatusCode::kInvalidArgument, "spec.devices: Too many"},
        ErrorCase{404, K8S_STATUS(404, "NotFound", "not found"), StatusCode::kNotFound, "404"},
        ErrorCase{401, "", StatusCode::kUnauthenticated, "HTTP 401"},
        ErrorCase{403, K8S_STATUS(403, "Forbidden", "no"), StatusCode::kPermissionDenied, "no"},
        ErrorCase{429, K8S_STATUS(429, "TooManyRequests", "slow down"),
                  StatusCode::kResourceExhausted, "slow down"},
        ErrorCase{503, "<html>proxy</html>", StatusCode::kUnavailable, "HTTP 503: <html>"}));

TEST(JsonStreamSplitterTest, SplitsValuesAcrossArbitraryChunks) {
  const std::string stream =
      "{\"type\":\"ADDED\",\"object\":{\"a\":\"}{\\\"\"}}\n"
      "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}"
      "{\"type\":\"DELETED\",\"object\":{\"b\":[1,{\"c\":2}]}}\n";
  for (size_t chunk = 1; chunk <= stream.size(); ++chunk) {
    JsonStreamSplitter splitter;
    std::vector<std::string> values;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      splitter.Append(std::string_view(stream).substr(i, chunk));
      std::string v;
      while (*splitter.Next(&v)) values.push_back(v);
    }
    ASSERT_EQ(values.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(values[0], "{\"type\":\"ADDED\",\"object\":{\"a\":\"}{\\\"\"}}");
    EXPECT_EQ(values[2], "{\"type\":\"DELETED\",\"object\":{\"b\":[1,{\"c\":2}]}}");
  }
}

TEST(JsonStreamSplitterTest, WaitsForAnIncompleteValue) {
  JsonStreamSplitter splitter;
  splitter.Append("{\"a\":{\"b\":1}");
  std::string v;
  EXPECT_FALSE(*splitter.Next(&v));
  splitter.Append("}");
  ASSERT_TRUE(*splitter.Next(&v));
  EXPECT_EQ(v, "{\"a\":{\"b\":1}}");
}

}  // namespace
}  // namespace dracpu::kube
