// KubeClient's retry, backoff and token logic against a scripted HttpClient (no network; the
// end-to-end tests against the apiserver simulator are in tests/sim/apiserver).
#include "dra-agent/kube/kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>

#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::kube {
namespace {

using ::dracpu::testing::FakeClock;
using ::dracpu::testing::FixedRandom;

using std::chrono::milliseconds;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class ScriptedHttp final : public HttpClient {
 public:
  explicit ScriptedHttp(std::deque<HttpResponse> script) : script_(std::move(script)) {}
  HttpResponse Send(const HttpRequest& request) override {
    requests.push_back(request);
    if (script_.empty()) return {TransportError::kOther, "script exhausted", 0, "", ""};
    HttpResponse r = script_.front();
    script_.pop_front();
    return r;
  }
  std::vector<HttpRequest> requests;

 private:
  std::deque<HttpResponse> script_;
};

// A FileSystem with one mutable file, for the token.
class OneFileSystem final : public FileSystem {
 public:
  std::string content;
  bool present = true;
  Result<std::string> ReadFile(std::string_view path, size_t) const override {
    if (!present) return NotFoundError(std::string(path));
    return content;
  }
  Result<std::vector<DirEntry>> ListDirectory(std::string_view) const override {
    return UnimplementedError("");
  }
  Result<std::string> ReadLink(std::string_view) const override { return UnimplementedError(""); }
  bool Exists(std::string_view) const override { return present; }
  bool IsDirectory(std::string_view) const override { return false; }
  Status WriteFileAtomically(std::string_view, std::string_view, mode_t) override {
    return UnimplementedError("");
  }
  Status RemoveFile(std::string_view) override { return UnimplementedError(""); }
  Status MakeDirectories(std::string_view, mode_t) override { return UnimplementedError(""); }
  std::string HostPath(std::string_view p) const override { return std::string(p); }
};

HttpResponse Http(int status, std::string body = "{}", std::string retry_after = "") {
  return {TransportError::kNone, "", status, std::move(body), std::move(retry_after)};
}
HttpResponse Transport(TransportError e) { return {e, "boom", 0, "", ""}; }

struct RetryCase {
  const char* name;
  const char* method;  // GET POST PUT DELETE
  std::vector<HttpResponse> script;
  size_t want_requests;
  StatusCode want_code;
  std::vector<int64_t> want_sleeps_ms;
};

void PrintTo(const RetryCase& c, std::ostream* os) { *os << c.name; }

class RetryTest : public ::testing::TestWithParam<RetryCase> {};

TEST_P(RetryTest, RetriesWhatMayHealAndBacksOff) {
  const RetryCase& c = GetParam();
  auto http =
      std::make_unique<ScriptedHttp>(std::deque<HttpResponse>(c.script.begin(), c.script.end()));
  ScriptedHttp* raw = http.get();
  OneFileSystem fs;
  FakeClock clock;
  FixedRandom random(0.0);  // no jitter: delays are the base sequence
  ClientOptions options;
  options.max_attempts = 4;
  options.backoff = {milliseconds(100), milliseconds(300), 2.0, 0.5};
  ClusterConfig config;
  config.server = "http://sim";
  auto client = KubeClient::Create(config, std::move(http), fs, clock, random, options);
  ASSERT_THAT(client, IsOk());
  Status s;
  const std::string method = c.method;
  if (method == "GET") {
    s = (*client)->Get("/version").status();
  } else if (method == "POST") {
    s = (*client)->Create("/apis/resource.k8s.io/v1/resourceslices", JsonObject()).status();
  } else if (method == "PUT") {
    s = (*client)->Update("/apis/resource.k8s.io/v1/resourceslices/a", JsonObject()).status();
  } else {
    s = (*client)->Delete("/apis/resource.k8s.io/v1/resourceslices/a");
  }
  EXPECT_THAT(s, StatusIs(c.want_code));
  EXPECT_EQ(raw->requests.size(), c.want_requests);
  std::vector<milliseconds> want;
  for (int64_t ms : c.want_sleeps_ms) want.push_back(milliseconds(ms));
  EXPECT_THAT(clock.sleeps(), ElementsAreArray(want));
}

INSTANTIATE_TEST_SUITE_P(
    Table, RetryTest,
    ::testing::Values(
        RetryCase{"OkFirstTime", "GET", {Http(200)}, 1, StatusCode::kOk, {}},
        RetryCase{"ServerErrorsThenOk",
                  "GET",
                  {Http(500), Http(503), Http(200)},
                  3,
                  StatusCode::kOk,
                  {100, 200}},
        RetryCase{"GivesUpAfterMaxAttemptsWithCappedDelays",
                  "GET",
                  {Http(500), Http(500), Http(500), Http(500)},
                  4,
                  StatusCode::kUnavailable,
                  {100, 200, 300}},
        RetryCase{"TooManyRequestsHonoursRetryAfter",
                  "GET",
                  {Http(429, "{}", "2"), Http(200)},
                  2,
                  StatusCode::kOk,
                  {300}},  // Retry-After 2 s, capped by the policy max
        RetryCase{"ConnectFailureRetriedForPost",
                  "POST",
                  {Transport(TransportError::kConnect), Http(201)},
                  2,
                  StatusCode::kOk,
                  {100}},
        RetryCase{"DroppedPostNotRetried",
                  "POST",
                  {Transport(TransportError::kIo)},
                  1,
                  StatusCode::kUnavailable,
                  {}},
        RetryCase{"DroppedGetRetried",
                  "GET",
                  {Transport(TransportError::kIo), Http(200)},
                  2,
                  StatusCode::kOk,
                  {100}},
        RetryCase{"TimeoutOnPutRetried",
                  "PUT",
                  {Transport(TransportError::kTimeout), Http(200)},
                  2,
                  StatusCode::kOk,
                  {100}},
        RetryCase{"TimeoutReportedAsDeadline",
                  "DELETE",
                  {Transport(TransportError::kTimeout), Transport(TransportError::kTimeout),
                   Transport(TransportError::kTimeout), Transport(TransportError::kTimeout)},
                  4,
                  StatusCode::kDeadlineExceeded,
                  {100, 200, 300}},
        RetryCase{"TlsErrorNotRetried",
                  "GET",
                  {Transport(TransportError::kTls)},
                  1,
                  StatusCode::kUnavailable,
                  {}},
        RetryCase{"ConflictNotRetriedHere", "PUT", {Http(409)}, 1, StatusCode::kAborted, {}},
        RetryCase{"InvalidNotRetried", "POST", {Http(422)}, 1, StatusCode::kInvalidArgument, {}},
        RetryCase{"NotFoundDelete", "DELETE", {Http(404)}, 1, StatusCode::kNotFound, {}}),
    [](const auto& info) { return std::string(info.param.name); });

std::string AuthOf(const HttpRequest& r) {
  for (const auto& [k, v] : r.headers) {
    if (k == "Authorization") return v;
  }
  return "";
}

TEST(KubeClientTokenTest, RereadsTheTokenFilePeriodicallyAndOn401) {
  auto http = std::make_unique<ScriptedHttp>(
      std::deque<HttpResponse>{Http(200), Http(200), Http(401), Http(200), Http(200)});
  ScriptedHttp* raw = http.get();
  OneFileSystem fs;
  fs.content = "one\n";
  FakeClock clock;
  FixedRandom random(0.0);
  ClusterConfig config;
  config.server = "https://sim";
  config.token_file = "/token";
  auto client = KubeClient::Create(config, std::move(http), fs, clock, random);
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT((*client)->Get("/version"), IsOk());
  fs.content = "two";
  // Within the refresh interval the cached token is still used ...
  ASSERT_THAT((*client)->Get("/version"), IsOk());
  // ... until the server refuses it: then the file is re-read at once.
  ASSERT_THAT((*client)->Get("/version"), IsOk());
  fs.content = "three";
  clock.Advance(std::chrono::seconds(61));
  ASSERT_THAT((*client)->Get("/version"), IsOk());
  std::vector<std::string> auth;
  for (const HttpRequest& r : raw->requests) auth.push_back(AuthOf(r));
  EXPECT_THAT(auth, ElementsAreArray(
                        {"Bearer one", "Bearer one", "Bearer one", "Bearer two", "Bearer three"}));
  EXPECT_TRUE(clock.sleeps().empty()) << "a 401 retry does not back off";
}

TEST(KubeClientTokenTest, KeepsTheLastTokenWhenTheFileVanishes) {
  auto http = std::make_unique<ScriptedHttp>(std::deque<HttpResponse>{Http(200), Http(200)});
  ScriptedHttp* raw = http.get();
  OneFileSystem fs;
  fs.content = "one";
  FakeClock clock;
  FixedRandom random(0.0);
  ClusterConfig config;
  config.server = "https://sim";
  config.token_file = "/token";
  auto client = KubeClient::Create(config, std::move(http), fs, clock, random);
  ASSERT_THAT(client, IsOk());
  ASSERT_THAT((*client)->Get("/version"), IsOk());
  fs.present = false;
  clock.Advance(std::chrono::minutes(5));
  ASSERT_THAT((*client)->Get("/version"), IsOk());
  EXPECT_EQ(AuthOf(raw->requests.at(1)), "Bearer one");
}

TEST(KubeClientTest, UnauthorizedWithAFixedTokenIsReported) {
  auto http = std::make_unique<ScriptedHttp>(std::deque<HttpResponse>{Http(401)});
  OneFileSystem fs;
  FakeClock clock;
  FixedRandom random(0.0);
  ClusterConfig config;
  config.server = "https://sim";
  config.bearer_token = "fixed";
  auto client = KubeClient::Create(config, std::move(http), fs, clock, random);
  ASSERT_THAT(client, IsOk());
  EXPECT_THAT((*client)->Get("/version"),
              StatusIs(StatusCode::kUnauthenticated, HasSubstr("GET /version: HTTP 401")));
}

// A client of http://sim whose answers are `script`, with default options.
struct ScriptedClient {
  explicit ScriptedClient(std::deque<HttpResponse> script) {
    auto http = std::make_unique<ScriptedHttp>(std::move(script));
    raw = http.get();
    ClusterConfig config;
    config.server = "http://sim";
    client = KubeClient::Create(config, std::move(http), fs, clock, random).value();
  }
  OneFileSystem fs;
  FakeClock clock;
  FixedRandom random{0.0};
  ScriptedHttp* raw = nullptr;  // owned by client
  std::unique_ptr<KubeClient> client;
};

TEST(KubeClientTest, GetBodyAnswersTheBodyAsItCameAndErrorsAsGetDoes) {
  // Not JSON on purpose: GetBody leaves parsing (and judging the text) to its caller.
  const std::string body = R"({"metadata": {"name": "c"}, "spacing":   kept)";
  ScriptedClient c({Http(200, body), Http(404, R"({"kind":"Status","code":404})")});
  const std::string path = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c";
  auto got = c.client->GetBody(path);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, body);
  EXPECT_EQ(c.raw->requests.at(0).method, "GET");
  EXPECT_EQ(c.raw->requests.at(0).url, "http://sim" + path);
  EXPECT_THAT(c.client->GetBody(path),
              StatusIs(StatusCode::kNotFound, HasSubstr("GET " + path + ": HTTP 404")));
}

TEST(KubeClientTest, ListEncodesSelectorsAndReturnsItems) {
  ScriptedClient c({Http(
      200,
      R"({"kind":"ResourceSliceList","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})")});
  ListOptions options;
  options.field_selector = "spec.nodeName=n1,spec.driver=dra.cpu";
  Result<ObjectList> list = c.client->List("/apis/resource.k8s.io/v1/resourceslices", options);
  ASSERT_THAT(list, IsOk());
  EXPECT_EQ(list->resource_version, "7");
  ASSERT_EQ(list->items.size(), 2u);
  EXPECT_EQ(list->items[1].Name(), "b");
  EXPECT_EQ(c.raw->requests.at(0).url,
            "http://sim/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dn1%"
            "2Cspec.driver%3Ddra.cpu");
}

}  // namespace
}  // namespace dracpu::kube
