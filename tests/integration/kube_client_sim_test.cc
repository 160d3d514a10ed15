// The Kubernetes client (dra-agent/kube) against the apiserver simulator on loopback: CRUD,
// selectors, conflicts, watches with bookmarks, 410, backoff, dropped connections, timeouts,
// token rotation, kubeconfig files and HTTPS.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/cluster_config.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/resources.h"
#include "tests/sim/apiserver/base64.h"
#include "tests/sim/apiserver/sim_apiserver.h"
#include "tests/sim/apiserver/slice_fixtures.h"
#include "tests/sim/apiserver/test_certs.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/sim_test_util.h"
#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::dracpu::testing::FakeClock;
using ::dracpu::testing::FixedRandom;

using kube::ClientOptions;
using kube::ClusterConfig;
using kube::JsonObject;
using kube::kResourceSlicesPath;
using kube::KubeClient;
using kube::WatchEvent;
using kube::WatchEventType;
using sim::Fault;
using sim::FaultAction;
using sim::SimApiServer;
using sim::SimState;
using sim::testing::GroupedDevice;
using sim::testing::Slice;
using sim::testing::TempDir;
using sim::testing::WaitFor;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

JsonObject ParseOrDie(const std::string& json) {
  Result<JsonObject> o = JsonObject::Parse(json);
  EXPECT_THAT(o, IsOk());
  return o.ok() ? *std::move(o) : JsonObject();
}

class KubeClientSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fs = NewPosixFileSystem("/");
    ASSERT_THAT(fs, IsOk());
    fs_ = *std::move(fs);
    state_ = std::make_shared<SimState>();
    StartServer({});
  }

  void StartServer(sim::SimServerOptions options) {
    options.bookmark_interval = std::chrono::hours(1);  // bookmarks only on request
    auto server = SimApiServer::Start(options, state_);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
  }

  std::unique_ptr<KubeClient> NewClient(ClusterConfig config, ClientOptions options = {}) {
    if (config.server.empty()) config.server = server_->url();
    auto http = kube::NewCurlHttpClient(config.tls);
    EXPECT_THAT(http, IsOk());
    if (!http.ok()) return nullptr;
    auto client = KubeClient::Create(config, *std::move(http), *fs_, clock_, random_, options);
    EXPECT_THAT(client, IsOk());
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::unique_ptr<KubeClient> NewClient() { return NewClient(ClusterConfig{}); }

  std::vector<std::string> Methods() {
    std::vector<std::string> out;
    for (const sim::RecordedRequest& r : state_->Requests()) out.push_back(r.method + " " + r.path);
    return out;
  }

  std::unique_ptr<FileSystem> fs_;
  testing::FakeClock clock_;
  testing::FixedRandom random_{0.5};
  std::shared_ptr<SimState> state_;
  std::unique_ptr<SimApiServer> server_;
  TempDir dir_;
};

TEST_F(KubeClientSimTest, VersionAndNode) {
  auto client = NewClient();
  const std::string uid = state_->AddNode("node-1");
  Result<JsonObject> version = client->Get(kube::kVersionPath);
  ASSERT_THAT(version, IsOk());
  EXPECT_NE(version->Find("gitVersion"), nullptr);
  Result<JsonObject> node = client->Get(kube::NodePath("node-1"));
  ASSERT_THAT(node, IsOk());
  EXPECT_EQ(node->Uid(), uid);
  EXPECT_THAT(
      client->Get(kube::NodePath("nope")),
      StatusIs(
          StatusCode::kNotFound,
          HasSubstr("GET /api/v1/nodes/nope: HTTP 404 NotFound: nodes \\x22nope\\x22 not found")));
}

TEST_F(KubeClientSimTest, ResourceSliceCrud) {
  auto client = NewClient();
  Result<JsonObject> created =
      client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", GroupedDevice(0, 8))));
  ASSERT_THAT(created, IsOk());
  const std::string name = created->Name();
  EXPECT_EQ(name.rfind("00000-dra.cpu-n1-", 0), 0u);
  const std::string path = kube::ResourceSlicePath(name);

  Result<JsonObject> got = client->Get(path);
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(got->ResourceVersion(), created->ResourceVersion());

  JsonObject modified = *got;
  modified.doc()["spec"]["pool"]["generation"].SetInt(2);
  Result<JsonObject> updated = client->Update(path, modified);
  ASSERT_THAT(updated, IsOk());
  EXPECT_NE(updated->ResourceVersion(), got->ResourceVersion());

  // `modified` still carries the old version: a real conflict.
  EXPECT_THAT(client->Update(path, modified),
              StatusIs(StatusCode::kAborted,
                       HasSubstr("HTTP 409 Conflict: Operation cannot be fulfilled")));
  EXPECT_TRUE(kube::IsConflict(client->Update(path, modified).status()));

  // Delete preconditions: a stale version conflicts, the current one deletes.
  EXPECT_TRUE(kube::IsConflict(client->Delete(path, {updated->Uid(), got->ResourceVersion()})));
  EXPECT_THAT(client->Delete(path, {updated->Uid(), updated->ResourceVersion()}), IsOk());
  EXPECT_TRUE(kube::IsNotFound(client->Delete(path)));
  EXPECT_THAT(state_->ResourceSlices(), SizeIs(0));
}

TEST_F(KubeClientSimTest, CreateWithAFixedNameTwiceIsAlreadyExists) {
  auto client = NewClient();
  ASSERT_THAT(client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", "", "fixed"))), IsOk());
  EXPECT_TRUE(kube::IsAlreadyExists(
      client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", "", "fixed"))).status()));
}

TEST_F(KubeClientSimTest, InvalidSliceIsRefusedNamingTheField) {
  auto client = NewClient();
  Result<JsonObject> r = client->Create(
      kResourceSlicesPath, ParseOrDie(Slice("n1", sim::testing::IndividualDevices(129))));
  EXPECT_THAT(r, StatusIs(StatusCode::kInvalidArgument,
                          HasSubstr("HTTP 422 Invalid: ResourceSlice.resource.k8s.io")));
  EXPECT_THAT(r.status().message(), HasSubstr("spec.devices: Too many: 129"));
}

TEST_F(KubeClientSimTest, StrictFieldValidationRefusesUnknownFields) {
  ClientOptions options;
  options.strict_field_validation = true;
  auto client = NewClient({}, options);
  JsonObject slice = ParseOrDie(Slice("n1", GroupedDevice(0, 4)));
  slice.doc()["spec"].AddMember("poolz", 1, slice.allocator());
  EXPECT_THAT(
      client->Create(kResourceSlicesPath, slice),
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr(
              "HTTP 400 BadRequest: strict decoding error: unknown field \\x22spec.poolz\\x22")));
  // Without it the server drops the field and warns.
  Result<JsonObject> created = NewClient()->Create(kResourceSlicesPath, slice);
  ASSERT_THAT(created, IsOk());
  EXPECT_EQ(created->Find("spec.poolz"), nullptr);
  EXPECT_THAT(state_->Warnings(), ElementsAre("unknown field \"spec.poolz\""));
}

TEST_F(KubeClientSimTest, ListWithFieldSelector) {
  auto client = NewClient();
  for (const auto& [node, driver] : std::vector<std::pair<std::string, std::string>>{
           {"n1", "dra.cpu"}, {"n1", "gpu.example.com"}, {"n2", "dra.cpu"}, {"n1", "dra.cpu"}}) {
    ASSERT_THAT(client->Create(kResourceSlicesPath, ParseOrDie(Slice(node, "", "", driver))),
                IsOk());
  }
  kube::ListOptions options;
  options.field_selector = "spec.nodeName=n1,spec.driver=dra.cpu";
  Result<kube::ObjectList> list = client->List(kResourceSlicesPath, options);
  ASSERT_THAT(list, IsOk());
  EXPECT_THAT(list->items, SizeIs(2));
  for (const JsonObject& o : list->items) {
    EXPECT_EQ(std::string(o.Find("spec.nodeName")->GetString()), "n1");
    EXPECT_EQ(std::string(o.Find("spec.driver")->GetString()), "dra.cpu");
  }
  EXPECT_EQ(list->resource_version, std::to_string(state_->resource_version()));
  EXPECT_EQ(state_->Requests().back().query,
            "fieldSelector=spec.nodeName%3Dn1%2Cspec.driver%3Ddra.cpu");
}

TEST_F(KubeClientSimTest, UpdateWithRetryRereadsAfterAConflict) {
  auto client = NewClient();
  auto other = NewClient();
  Result<JsonObject> created =
      client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", "", "s")));
  ASSERT_THAT(created, IsOk());
  const std::string path = kube::ResourceSlicePath("s");
  int calls = 0;
  Result<JsonObject> updated = client->UpdateWithRetry(path, [&](JsonObject& o) {
    if (++calls == 1) {
      // Someone else writes between our read and our write.
      JsonObject theirs = o;
      theirs.doc()["spec"]["pool"]["generation"].SetInt(5);
      EXPECT_THAT(other->Update(path, theirs), IsOk());
    }
    const int64_t g = o.doc()["spec"]["pool"]["generation"].GetInt64();
    o.doc()["spec"]["pool"]["generation"].SetInt64(g + 1);
    return Status::Ok();
  });
  ASSERT_THAT(updated, IsOk());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(updated->Find("spec.pool.generation")->GetInt64(), 6) << "built on the re-read object";

  // An injected conflict on every PUT: gives up after the attempts, reporting the conflict.
  Fault f;
  f.method = "PUT";
  f.status = 409;
  f.reason = "Conflict";
  f.count = -1;
  state_->AddFault(f);
  EXPECT_THAT(client->UpdateWithRetry(
                  path, [](JsonObject&) { return Status::Ok(); }, 3),
              StatusIs(StatusCode::kAborted, HasSubstr("after 3 attempts")));
}

TEST_F(KubeClientSimTest, ServerErrorsBackOffWithJitterThenSucceed) {
  auto client = NewClient();
  Fault f;
  f.path_prefix = "/version";
  f.status = 500;
  f.count = 3;
  state_->AddFault(f);
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());
  // 250 ms doubling, jittered by random 0.5 * jitter 0.5 = 25% off.
  EXPECT_THAT(clock_.sleeps(),
              ElementsAre(milliseconds(187), milliseconds(375), milliseconds(750)));
  EXPECT_THAT(Methods(), SizeIs(4));
}

TEST_F(KubeClientSimTest, TooManyRequestsWaitsForRetryAfter) {
  auto client = NewClient();
  Fault f;
  f.status = 429;
  f.reason = "TooManyRequests";
  f.retry_after = "3";
  state_->AddFault(f);
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());
  EXPECT_THAT(clock_.sleeps(), ElementsAre(milliseconds(3000)));
}

TEST_F(KubeClientSimTest, PersistentErrorsGiveUpWithTheLastError) {
  ClientOptions options;
  options.max_attempts = 3;
  auto client = NewClient({}, options);
  Fault f;
  f.status = 503;
  f.reason = "ServiceUnavailable";
  f.count = -1;
  state_->AddFault(f);
  EXPECT_THAT(client->Get(kube::kVersionPath),
              StatusIs(StatusCode::kUnavailable, HasSubstr("HTTP 503 ServiceUnavailable")));
  EXPECT_THAT(clock_.sleeps(), SizeIs(2));
}

TEST_F(KubeClientSimTest, DroppedConnectionRetriedForGetNotForPost) {
  auto client = NewClient();
  Fault drop;
  drop.action = FaultAction::kDropConnection;
  drop.method = "GET";
  state_->AddFault(drop);
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());
  EXPECT_THAT(Methods(), ElementsAre("GET /version", "GET /version"));

  state_->ClearRequests();
  drop.method = "POST";
  state_->AddFault(drop);
  EXPECT_THAT(client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", ""))),
              StatusIs(StatusCode::kUnavailable));
  EXPECT_THAT(Methods(), ElementsAre("POST /apis/resource.k8s.io/v1/resourceslices"));
  EXPECT_THAT(state_->ResourceSlices(), SizeIs(0));
}

TEST_F(KubeClientSimTest, PerRequestTimeout) {
  ClientOptions options;
  options.request_timeout = milliseconds(200);
  options.max_attempts = 1;
  auto client = NewClient({}, options);
  Fault slow;
  slow.action = FaultAction::kDelay;
  slow.delay = std::chrono::seconds(20);  // far beyond the timeout; Stop() cuts it short
  state_->AddFault(slow);
  EXPECT_THAT(client->Get(kube::kVersionPath), StatusIs(StatusCode::kDeadlineExceeded));
  server_->Stop();
}

TEST_F(KubeClientSimTest, ConnectionsAreReused) {
  auto client = NewClient();
  for (int i = 0; i < 5; ++i) ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());
  std::set<uint64_t> connections;
  for (const sim::RecordedRequest& r : state_->Requests()) connections.insert(r.connection);
  EXPECT_THAT(connections, SizeIs(1));
}

TEST_F(KubeClientSimTest, RotatedTokenFileIsUsedOnTheNextRequest) {
  const std::string token_path = dir_.Write("sa/token", "first\n");
  state_->SetToken("first");
  ClusterConfig config;
  config.token_file = token_path;
  auto client = NewClient(config);
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());

  // The kubelet rotates the token; the old one stops working at once.
  dir_.Write("sa/token", "second\n");
  state_->SetToken("second");
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());

  // After the refresh interval the file is re-read before sending: no 401 on the way.
  dir_.Write("sa/token", "third\n");
  state_->SetToken("third");
  clock_.Advance(std::chrono::minutes(2));
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());

  std::vector<std::string> seen;
  for (const sim::RecordedRequest& r : state_->Requests()) {
    seen.push_back(r.authorization + " " + std::to_string(r.status));
  }
  EXPECT_THAT(seen, ElementsAre("Bearer first 200", "Bearer first 401", "Bearer second 200",
                                "Bearer third 200"));
}

TEST_F(KubeClientSimTest, WatchDeliversEventsAndBookmarksAndResumes) {
  auto client = NewClient();
  auto writer = NewClient();
  kube::ListOptions list_options;
  list_options.field_selector = "spec.nodeName=n1";
  Result<kube::ObjectList> list = client->List(kResourceSlicesPath, list_options);
  ASSERT_THAT(list, IsOk());

  std::mutex mu;
  std::vector<std::pair<WatchEventType, std::string>> events;  // type, name or bookmark rv
  std::stop_source stop;
  kube::WatchOptions options;
  options.field_selector = "spec.nodeName=n1";
  options.resource_version = list->resource_version;
  Status watch_status;
  std::thread watcher([&] {
    watch_status = client->Watch(
        kResourceSlicesPath, options,
        [&](const WatchEvent& e) {
          std::lock_guard<std::mutex> lock(mu);
          events.emplace_back(e.type, e.type == WatchEventType::kBookmark
                                          ? e.object.ResourceVersion()
                                          : e.object.Name());
          return true;
        },
        stop.get_token());
  });
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return events.size();
  };
  ASSERT_THAT(writer->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", "", "a"))), IsOk());
  ASSERT_THAT(writer->Create(kResourceSlicesPath, ParseOrDie(Slice("n2", "", "other"))), IsOk());
  ASSERT_TRUE(WaitFor([&] { return count() >= 1; }));
  Result<JsonObject> a = writer->Get(kube::ResourceSlicePath("a"));
  ASSERT_THAT(a, IsOk());
  a->doc()["spec"]["pool"]["generation"].SetInt(2);
  ASSERT_THAT(writer->Update(kube::ResourceSlicePath("a"), *a), IsOk());
  ASSERT_TRUE(WaitFor([&] { return count() >= 2; }));
  state_->RequestBookmarks();
  ASSERT_TRUE(WaitFor([&] { return count() >= 3; }));
  ASSERT_THAT(writer->Delete(kube::ResourceSlicePath("a")), IsOk());
  ASSERT_TRUE(WaitFor([&] { return count() >= 4; }));
  stop.request_stop();
  watcher.join();
  EXPECT_THAT(watch_status, StatusIs(StatusCode::kCancelled));
  std::string bookmark_rv;
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_THAT(events, SizeIs(4));
    EXPECT_EQ(events[0], std::make_pair(WatchEventType::kAdded, std::string("a")));
    EXPECT_EQ(events[1], std::make_pair(WatchEventType::kModified, std::string("a")));
    EXPECT_EQ(events[2].first, WatchEventType::kBookmark);
    bookmark_rv = events[2].second;
    EXPECT_EQ(events[3], std::make_pair(WatchEventType::kDeleted, std::string("a")));
  }
  // Resuming from the bookmark replays only what came after it.
  options.resource_version = bookmark_rv;
  std::vector<WatchEventType> replay;
  EXPECT_THAT(client->Watch(kResourceSlicesPath, options,
                            [&](const WatchEvent& e) {
                              replay.push_back(e.type);
                              return false;  // one event is enough
                            }),
              IsOk());
  EXPECT_THAT(replay, ElementsAre(WatchEventType::kDeleted));
  const std::vector<sim::RecordedRequest> requests = state_->Requests();
  EXPECT_TRUE(std::any_of(requests.begin(), requests.end(), [](const sim::RecordedRequest& r) {
    return r.query.find("allowWatchBookmarks=true") != std::string::npos;
  }));
}

TEST_F(KubeClientSimTest, WatchEndsNormallyAtTimeoutSeconds) {
  auto client = NewClient();
  kube::WatchOptions options;
  options.resource_version = std::to_string(state_->resource_version());
  options.timeout_seconds = 1;
  EXPECT_THAT(client->Watch(kResourceSlicesPath, options, [](const WatchEvent&) { return true; }),
              IsOk());
}

TEST_F(KubeClientSimTest, WatchFromATooOldVersionIsGone) {
  auto client = NewClient();
  const std::string old_rv = std::to_string(state_->resource_version());
  ASSERT_THAT(client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", ""))), IsOk());
  state_->CompactHistory();
  kube::WatchOptions options;
  options.resource_version = old_rv;
  Status s = client->Watch(kResourceSlicesPath, options, [](const WatchEvent&) { return true; });
  EXPECT_TRUE(kube::IsGone(s)) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("410 Expired"));

  // A 410 as the HTTP status (not an ERROR event) is the same to the caller.
  Fault f;
  f.query_contains = "watch=true";
  f.status = 410;
  f.reason = "Gone";
  state_->AddFault(f);
  options.resource_version = std::to_string(state_->resource_version());
  EXPECT_TRUE(kube::IsGone(
      client->Watch(kResourceSlicesPath, options, [](const WatchEvent&) { return true; })));

  // An open watch told its history is gone (ERROR event mid-stream).
  state_->ClearRequests();
  options.timeout_seconds = 60;  // bounds the test if the expiry were lost
  Status mid;
  std::thread watcher([&] {
    mid = client->Watch(kResourceSlicesPath, options, [&](const WatchEvent&) { return true; });
  });
  ASSERT_TRUE(WaitFor([&] {
    for (const sim::RecordedRequest& r : state_->Requests()) {
      if (r.query.find("watch=true") != std::string::npos && r.status == 200) return true;
    }
    return false;
  }));
  state_->ExpireWatches();
  watcher.join();
  EXPECT_TRUE(kube::IsGone(mid)) << mid.ToString();
}

TEST_F(KubeClientSimTest, ApiDownThenBack) {
  ClientOptions options;
  options.max_attempts = 2;
  auto client = NewClient({}, options);
  ASSERT_THAT(client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", "", "kept"))), IsOk());
  const uint16_t port = server_->port();
  server_->Stop();
  EXPECT_THAT(client->Get(kube::kVersionPath), StatusIs(StatusCode::kUnavailable));
  sim::SimServerOptions same_port;
  same_port.port = port;
  StartServer(same_port);
  ASSERT_THAT(client->Get(kube::ResourceSlicePath("kept")), IsOk()) << "state outlives the server";
}

TEST_F(KubeClientSimTest, EveryRequestIsInApiCallsUsed) {
  auto client = NewClient();
  state_->AddNode("n1");
  ASSERT_TRUE(state_->PutResourceClaim("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\"}}"));
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());
  ASSERT_THAT(client->Get(kube::NodePath("n1")), IsOk());
  ASSERT_THAT(client->Get(kube::ResourceClaimPath("ns", "c")), IsOk());
  Result<JsonObject> s = client->Create(kResourceSlicesPath, ParseOrDie(Slice("n1", "")));
  ASSERT_THAT(s, IsOk());
  ASSERT_THAT(client->List(kResourceSlicesPath, {}), IsOk());
  ASSERT_THAT(client->UpdateWithRetry(kube::ResourceSlicePath(s->Name()),
                                      [](JsonObject&) { return Status::Ok(); }),
              IsOk());
  kube::WatchOptions w;
  w.timeout_seconds = 1;
  ASSERT_THAT(client->Watch(kResourceSlicesPath, w, [](const WatchEvent&) { return false; }),
              IsOk());
  ASSERT_THAT(client->Delete(kube::ResourceSlicePath(s->Name())), IsOk());
  const std::vector<kube::ApiCall> allowed = kube::ApiCallsUsed();
  std::set<std::string> verbs;
  for (const sim::RecordedRequest& r : state_->Requests()) {
    const kube::ApiCall call = kube::ApiCallFor(r.method, r.path + "?" + r.query);
    EXPECT_THAT(allowed, ::testing::Contains(call)) << r.method << " " << r.path << "?" << r.query;
    verbs.insert(call.resource + ":" + call.verb);
  }
  EXPECT_THAT(verbs, SizeIs(9));
}

class KubeClientHttpsTest : public KubeClientSimTest {
 protected:
  void SetUp() override {
    auto fs = NewPosixFileSystem("/");
    ASSERT_THAT(fs, IsOk());
    fs_ = *std::move(fs);
    state_ = std::make_shared<SimState>();
    auto server_cert = sim::GenerateSelfSignedCert("sim-server");
    ASSERT_THAT(server_cert, IsOk());
    server_cert_ = *server_cert;
    ASSERT_THAT(sim::WriteCertFiles(server_cert_, dir_.path(), "server"), IsOk());
    auto client_cert = sim::GenerateSelfSignedCert("dracpu-client");
    ASSERT_THAT(client_cert, IsOk());
    client_cert_ = *client_cert;
    ASSERT_THAT(sim::WriteCertFiles(client_cert_, dir_.path(), "client"), IsOk());
  }
  void StartTls(bool require_client_cert) {
    sim::SimServerOptions options;
    options.tls_cert_file = dir_.path() + "/server.crt";
    options.tls_key_file = dir_.path() + "/server.key";
    if (require_client_cert) options.client_ca_file = dir_.path() + "/client.crt";
    StartServer(options);
  }
  sim::CertPair server_cert_, client_cert_;
};

TEST_F(KubeClientHttpsTest, ServerRefusesMissingCertificateFiles) {
  sim::SimServerOptions options;
  options.tls_cert_file = dir_.path() + "/nope.crt";
  options.tls_key_file = dir_.path() + "/server.key";
  EXPECT_THAT(SimApiServer::Start(options, state_),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("nope.crt")));
  sim::SimServerOptions taken;
  taken.port = 0;
  auto first = SimApiServer::Start(taken, state_);
  ASSERT_THAT(first, IsOk());
  taken.port = (*first)->port();
  EXPECT_THAT(SimApiServer::Start(taken, state_), StatusIs(StatusCode::kUnavailable))
      << "the port is in use";
}

TEST_F(KubeClientHttpsTest, BearerTokenOverHttps) {
  StartTls(false);
  state_->SetToken("s3cret");
  ASSERT_EQ(server_->url().rfind("https://127.0.0.1:", 0), 0u);
  ClusterConfig config;
  config.bearer_token = "s3cret";
  config.tls.ca_pem = server_cert_.cert_pem;
  auto client = NewClient(config);
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());
  EXPECT_EQ(state_->Requests().at(0).authorization, "Bearer s3cret");

  config.bearer_token = "wrong";
  EXPECT_THAT(NewClient(config)->Get(kube::kVersionPath), StatusIs(StatusCode::kUnauthenticated));
}

TEST_F(KubeClientHttpsTest, ServerCertificateIsVerified) {
  StartTls(false);
  ClusterConfig untrusted;
  untrusted.tls.ca_pem = client_cert_.cert_pem;  // some other CA
  EXPECT_THAT(NewClient(untrusted)->Get(kube::kVersionPath), StatusIs(StatusCode::kUnavailable));
  ClusterConfig insecure;
  insecure.tls.insecure_skip_verify = true;
  EXPECT_THAT(NewClient(insecure)->Get(kube::kVersionPath), IsOk());
}

TEST_F(KubeClientHttpsTest, ClientCertificateAuthentication) {
  StartTls(true);
  ClusterConfig config;
  config.tls.ca_pem = server_cert_.cert_pem;
  EXPECT_THAT(NewClient(config)->Get(kube::kVersionPath), StatusIs(StatusCode::kUnavailable))
      << "the server requires a client certificate";
  config.tls.client_cert_pem = client_cert_.cert_pem;
  config.tls.client_key_pem = client_cert_.key_pem;
  EXPECT_THAT(NewClient(config)->Get(kube::kVersionPath), IsOk());
}

TEST_F(KubeClientHttpsTest, KubeconfigFilesEndToEnd) {
  StartTls(true);
  state_->SetToken("from-file");
  dir_.Write("token", "from-file\n");
  const std::string kubeconfig =
      dir_.Write("kubeconfig",
                 "apiVersion: v1\nkind: Config\ncurrent-context: sim\n"
                 "clusters:\n- name: sim\n  cluster:\n    server: " +
                     server_->url() +
                     "\n    certificate-authority: server.crt\n"
                     "users:\n- name: me\n  user:\n    tokenFile: token\n"
                     "    client-certificate: client.crt\n    client-key: client.key\n"
                     "contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: me\n");
  Result<ClusterConfig> config = kube::LoadKubeconfig(*fs_, kubeconfig);
  ASSERT_THAT(config, IsOk());
  auto client = NewClient(*config);
  ASSERT_THAT(client->Get(kube::kVersionPath), IsOk());
  EXPECT_EQ(state_->Requests().at(0).authorization, "Bearer from-file");
}

TEST_F(KubeClientHttpsTest, KubeconfigDataEndToEnd) {
  StartTls(true);
  const std::string kubeconfig = dir_.Write(
      "kubeconfig-data",
      "current-context: sim\n"
      "clusters:\n- name: sim\n  cluster:\n    server: " +
          server_->url() +
          "\n    certificate-authority-data: " + sim::Base64Encode(server_cert_.cert_pem) +
          "\nusers:\n- name: me\n  user:\n"
          "    client-certificate-data: " +
          sim::Base64Encode(client_cert_.cert_pem) +
          "\n    client-key-data: " + sim::Base64Encode(client_cert_.key_pem) +
          "\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: me\n");
  Result<ClusterConfig> config = kube::LoadKubeconfig(*fs_, kubeconfig);
  ASSERT_THAT(config, IsOk());
  EXPECT_THAT(NewClient(*config)->Get(kube::kVersionPath), IsOk());
}

TEST_F(KubeClientSimTest, PlainHttpKubeconfigAsBehindKubectlProxy) {
  const std::string kubeconfig = dir_.Write(
      "kubeconfig",
      "current-context: proxy\nclusters:\n- name: p\n  cluster:\n    server: " + server_->url() +
          "/\ncontexts:\n- name: proxy\n  context:\n    cluster: p\n");
  Result<ClusterConfig> config = kube::LoadKubeconfig(*fs_, kubeconfig);
  ASSERT_THAT(config, IsOk());
  EXPECT_THAT(NewClient(*config)->Get(kube::kVersionPath), IsOk());
  EXPECT_EQ(state_->Requests().at(0).authorization, "");
}

}  // namespace
}  // namespace dracpu
