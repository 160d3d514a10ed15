// Informer against the simulator: list + watch cache, handlers, 410 re-list with a diff, and an
// API outage the informer rides out without a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/informer.h"
#include "dra-agent/kube/resources.h"
#include "tests/sim/apiserver/sim_apiserver.h"
#include "tests/sim/apiserver/slice_fixtures.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/sim_test_util.h"
#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::dracpu::testing::FakeClock;

using kube::Informer;
using kube::JsonObject;
using sim::SimApiServer;
using sim::SimState;
using sim::testing::Slice;
using sim::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";

class InformerSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fs = NewPosixFileSystem("/");
    ASSERT_THAT(fs, IsOk());
    fs_ = *std::move(fs);
    state_ = std::make_shared<SimState>();
    Start(0);
    kube::ClusterConfig config;
    config.server = server_->url();
    auto http = kube::NewCurlHttpClient(config.tls);
    ASSERT_THAT(http, IsOk());
    kube::ClientOptions options;
    options.max_attempts = 2;
    options.backoff = {std::chrono::milliseconds(10), std::chrono::milliseconds(50), 2.0, 0.5};
    auto client =
        kube::KubeClient::Create(config, *std::move(http), *fs_, clock_, random_, options);
    ASSERT_THAT(client, IsOk());
    client_ = *std::move(client);
  }
  void TearDown() override {
    StopInformer();
    if (server_) server_->Stop();
  }

  void Start(uint16_t port) {
    sim::SimServerOptions options;
    options.port = port;
    options.bookmark_interval = std::chrono::milliseconds(100);
    auto server = SimApiServer::Start(options, state_);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
  }

  void Create(const std::string& node, const std::string& name) {
    ASSERT_EQ(state_->Handle({"POST", kSlices, "", Slice(node, "", name)}).status, 201);
  }

  void StartInformer() { StartInformer(system_clock_); }
  void StartInformer(Clock& clock) {
    kube::InformerOptions options;
    options.field_selector = "spec.nodeName=n1,spec.driver=dra.cpu";
    options.backoff = {std::chrono::milliseconds(10), std::chrono::milliseconds(50), 2.0, 0.5};
    kube::InformerHandlers handlers;
    handlers.on_add = [this](const JsonObject& o) { Log("add " + o.Name()); };
    handlers.on_update = [this](const JsonObject&, const JsonObject& o) {
      Log("update " + o.Name());
    };
    handlers.on_delete = [this](const JsonObject& o) { Log("delete " + o.Name()); };
    informer_ = std::make_unique<Informer>(*client_, kSlices, options, handlers, clock, random_);
    stop_ = std::stop_source();
    thread_ = std::thread([this] { run_status_ = informer_->Run(stop_.get_token()); });
  }
  void StopInformer() {
    stop_.request_stop();
    if (thread_.joinable()) thread_.join();
  }

  void Log(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(s);
  }
  std::vector<std::string> TakeLog() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(log_, {});
  }
  size_t LogSize() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_.size();
  }
  std::set<std::string> CachedNames() {
    std::set<std::string> out;
    for (const JsonObject& o : informer_->Snapshot()) out.insert(o.Name());
    return out;
  }

  std::unique_ptr<FileSystem> fs_;
  SystemClock clock_;
  SystemClock system_clock_;
  DefaultRandom random_;
  std::shared_ptr<SimState> state_;
  std::unique_ptr<SimApiServer> server_;
  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<Informer> informer_;
  std::stop_source stop_;
  std::thread thread_;
  Status run_status_;
  std::mutex mu_;
  std::vector<std::string> log_;
};

TEST_F(InformerSimTest, ListsThenFollowsTheWatch) {
  Create("n1", "a");
  Create("n1", "b");
  Create("n2", "elsewhere");
  StartInformer();
  ASSERT_TRUE(WaitFor([&] { return informer_->synced(); }));
  EXPECT_THAT(TakeLog(), UnorderedElementsAre("add a", "add b"));
  EXPECT_EQ(CachedNames(), (std::set<std::string>{"a", "b"}));

  Create("n1", "c");
  ASSERT_TRUE(WaitFor([&] { return LogSize() >= 1; }));
  ASSERT_TRUE(state_->DeleteResourceSlice("a"));
  ASSERT_TRUE(WaitFor([&] { return LogSize() >= 2; }));
  EXPECT_THAT(TakeLog(), ElementsAre("add c", "delete a"));
  EXPECT_EQ(CachedNames(), (std::set<std::string>{"b", "c"}));
  // Bookmarks advance the resume point without touching the cache.
  const std::string rv = informer_->resource_version();
  Create("n2", "moves-the-version");
  ASSERT_TRUE(WaitFor([&] { return informer_->resource_version() != rv; }));
  EXPECT_EQ(CachedNames(), (std::set<std::string>{"b", "c"}));
  StopInformer();
  EXPECT_EQ(informer_->stats().lists, 1u);
}

TEST_F(InformerSimTest, RidesOutAnApiOutageAndRelistsAfter410) {
  Create("n1", "a");
  Create("n1", "b");
  StartInformer();
  ASSERT_TRUE(WaitFor([&] { return informer_->synced(); }));
  TakeLog();
  const uint16_t port = server_->port();
  server_->Stop();
  // Let the informer see the outage (a refused reconnect) before the API returns; without this
  // wait, a slow run (ASan) could reconnect only after the restart and never record the error.
  ASSERT_TRUE(WaitFor([&] { return informer_->stats().errors >= 1; }));
  // While the API is down: one slice deleted, one created, one modified, and the history
  // compacted, so the informer's resume version is too old when the API returns.
  ASSERT_TRUE(state_->DeleteResourceSlice("a"));
  Create("n1", "new");
  const std::string b = state_->Handle({"GET", std::string(kSlices) + "/b", "", ""}).body;
  Result<JsonObject> modified = JsonObject::Parse(b);
  ASSERT_THAT(modified, IsOk());
  modified->doc()["spec"]["pool"]["generation"].SetInt(7);
  ASSERT_EQ(state_->Handle({"PUT", std::string(kSlices) + "/b", "", modified->ToString()}).status,
            200);
  state_->CompactHistory();
  Start(port);
  ASSERT_TRUE(WaitFor([&] { return LogSize() >= 3; }));
  EXPECT_THAT(TakeLog(), UnorderedElementsAre("add new", "update b", "delete a"));
  EXPECT_EQ(CachedNames(), (std::set<std::string>{"b", "new"}));
  const kube::InformerStats stats = informer_->stats();
  EXPECT_GE(stats.gone, 1u);
  EXPECT_GE(stats.lists, 2u);
  EXPECT_GE(stats.errors, 1u) << "connection refused while the API was down";
  // And it keeps watching afterwards.
  Create("n1", "after");
  ASSERT_TRUE(WaitFor([&] { return LogSize() >= 1; }));
  EXPECT_THAT(TakeLog(), ElementsAre("add after"));
}

TEST_F(InformerSimTest, ExpiredWatchRelists) {
  Create("n1", "a");
  StartInformer();
  ASSERT_TRUE(WaitFor([&] { return informer_->synced(); }));
  // Expire only once the server has the watch open (it records a watch when it starts
  // streaming); an expiry before that would not concern it.
  ASSERT_TRUE(WaitFor([&] {
    for (const sim::RecordedRequest& r : state_->Requests()) {
      if (r.query.find("watch=true") != std::string::npos && r.status == 200) return true;
    }
    return false;
  }));
  state_->ExpireWatches();
  ASSERT_TRUE(
      WaitFor([&] { return informer_->stats().gone >= 1 && informer_->stats().lists >= 2; }));
  EXPECT_EQ(CachedNames(), (std::set<std::string>{"a"}));
  EXPECT_THAT(TakeLog(), ElementsAre("add a")) << "a re-list of unchanged objects reports nothing";
}

TEST_F(InformerSimTest, DroppedWatchResumesWithoutRelisting) {
  Create("n1", "a");
  StartInformer();
  ASSERT_TRUE(WaitFor([&] { return informer_->synced() && informer_->stats().watches >= 1; }));
  TakeLog();
  // Make sure the watch is established before cutting it: a created object arrives through it.
  Create("n1", "b");
  ASSERT_TRUE(WaitFor([&] { return LogSize() >= 1; }));
  state_->DropWatches();
  Create("n1", "c");  // while the informer is reconnecting, or just after
  ASSERT_TRUE(WaitFor([&] { return LogSize() >= 2; }));
  EXPECT_THAT(TakeLog(), ElementsAre("add b", "add c"));
  EXPECT_EQ(informer_->stats().lists, 1u) << "resumed from its version, no re-list";
  EXPECT_GE(informer_->stats().watches, 2u);
}

TEST_F(InformerSimTest, OutageBackoffGrowsAndIsCapped) {
  server_->Stop();  // the API is down from the start
  testing::FakeClock clock(std::chrono::milliseconds(1));
  kube::InformerOptions options;  // the default policy
  Informer informer(*client_, kSlices, options, {}, clock, random_);
  std::thread t([&] { (void)informer.Run(stop_.get_token()); });
  ASSERT_TRUE(WaitFor([&] { return clock.sleeps().size() >= 12; }));
  stop_.request_stop();
  t.join();
  const std::vector<std::chrono::milliseconds> sleeps = clock.sleeps();
  EXPECT_FALSE(informer.synced());
  EXPECT_GE(sleeps[0], std::chrono::milliseconds(250));
  EXPECT_LE(sleeps[0], std::chrono::milliseconds(500));
  for (const auto& d : sleeps) EXPECT_LE(d, std::chrono::seconds(10));
  EXPECT_GE(sleeps[11], std::chrono::seconds(5)) << "grown to the cap (jittered into [5 s, 10 s])";
}

TEST_F(InformerSimTest, RepeatedGoneBacksOffInsteadOfSpinning) {
  Create("n1", "a");
  sim::Fault gone;
  gone.query_contains = "watch=true";
  gone.status = 410;
  gone.reason = "Expired";
  gone.count = -1;
  state_->AddFault(gone);
  testing::FakeClock clock(std::chrono::milliseconds(1));
  StartInformer(clock);
  ASSERT_TRUE(WaitFor([&] { return informer_->stats().gone >= 5; }));
  StopInformer();
  // The first 410 re-lists at once; every further one in a row waits first.
  const kube::InformerStats stats = informer_->stats();
  EXPECT_EQ(clock.sleeps().size(), stats.gone - 1);
  // Each 410 re-lists (the last re-list may have happened just before the stop).
  EXPECT_GE(stats.lists, stats.gone);
  EXPECT_LE(stats.lists, stats.gone + 1);
  EXPECT_TRUE(kube::IsGone(run_status_));
}

}  // namespace
}  // namespace dracpu
