#include "dra-agent/kubelet/kubelet_plugin_server.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "dra-agent/kubelet/dra_service.h"
#include "pluginregistration.grpc.pb.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::dra {
namespace {

using ::testing::_;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Return;
using ::testing::StrictMock;

class MockClaimPreparer : public ClaimPreparer {
 public:
  MOCK_METHOD((std::map<std::string, ClaimPrepareResult>), Prepare, (const std::vector<ClaimRef>&),
              (override));
  MOCK_METHOD((std::map<std::string, std::string>), Unprepare, (const std::vector<ClaimRef>&),
              (override));
};

class KubeletPluginServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto paths = MakePluginPaths(root_);
    ASSERT_THAT(paths, IsOk());
    options_.paths = *paths;
  }
  // Set expectations before: gmock reads them unlocked on the server's handler threads, which
  // then exist only after them, whereas a call made later reaches its handler through gRPC's
  // hand-offs, which ThreadSanitizer does not see (common/thread_sanitizer.h).
  void StartServer() {
    auto server =
        KubeletPluginServer::Start(options_, preparer_, [this](bool ok, const std::string& e) {
          std::lock_guard lock(statuses_mu_);
          statuses_.push_back({ok, e});
        });
    ASSERT_THAT(server, IsOk());
    server_ = std::move(server).value();
  }

  // The callback runs on a gRPC server thread; the test reads after the call has returned.
  std::vector<std::pair<bool, std::string>> Statuses() {
    std::lock_guard lock(statuses_mu_);
    return statuses_;
  }

  std::shared_ptr<grpc::Channel> Channel(const std::string& path) {
    return grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
  }

  testing::TempDir tmp_{"dracpu-kp"};
  const std::string root_ = tmp_.path();
  KubeletPluginServerOptions options_;
  StrictMock<MockClaimPreparer> preparer_;
  std::mutex statuses_mu_;
  std::vector<std::pair<bool, std::string>> statuses_;  // guarded by statuses_mu_
  std::unique_ptr<KubeletPluginServer> server_;
};

TEST_F(KubeletPluginServerTest, RegistersAsTheKubeletExpects) {
  StartServer();
  auto stub =
      pluginregistration::Registration::NewStub(Channel(options_.paths.registration_socket));
  for (int i = 0; i < 3; ++i) {  // the kubelet calls GetInfo repeatedly
    grpc::ClientContext ctx;
    pluginregistration::InfoRequest req;
    pluginregistration::PluginInfo info;
    ASSERT_TRUE(stub->GetInfo(&ctx, req, &info).ok());
    EXPECT_EQ(info.type(), "DRAPlugin");
    EXPECT_EQ(info.name(), "dra.cpu");
    EXPECT_EQ(info.endpoint(), root_ + "/plugins/dra.cpu/dra.sock");
    EXPECT_THAT(info.supported_versions(), ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin"));
  }
  EXPECT_EQ(server_->get_info_calls(), 3);
  grpc::ClientContext ctx;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(false);
  status.set_error("version mismatch");
  pluginregistration::RegistrationStatusResponse resp;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&ctx, status, &resp).ok());
  EXPECT_FALSE(server_->registered());
  EXPECT_THAT(Statuses(), ElementsAre(std::pair<bool, std::string>(false, "version mismatch")));
}

TEST_F(KubeletPluginServerTest, SocketsAreOwnerOnly) {
  StartServer();
  for (const std::string& p : {options_.paths.registration_socket, options_.paths.dra_socket}) {
    struct stat st;
    ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
    EXPECT_TRUE(S_ISSOCK(st.st_mode)) << p;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << p;
  }
  struct stat dir;
  ASSERT_EQ(::stat(options_.paths.plugin_dir.c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 0777, 0750u);
  server_->Shutdown();
  EXPECT_FALSE(std::filesystem::exists(options_.paths.registration_socket));
  EXPECT_FALSE(std::filesystem::exists(options_.paths.dra_socket));
}

TEST_F(KubeletPluginServerTest, PreparesThroughV1WithShareId) {
  PreparedDevice device{{"req"}, "node-a", "cpudevnuma000", {"dra.k8s.io/cpu=claim-u1"}, "share-1"};
  EXPECT_CALL(preparer_,
              Prepare(ElementsAre(Field(&ClaimRef::uid, "u1"), Field(&ClaimRef::uid, "u2"))))
      .WillOnce(Return(std::map<std::string, ClaimPrepareResult>{
          {"u1", {{device}, ""}}, {"u2", {{}, "claim u2: no allocation for driver dra.cpu"}}}));
  StartServer();  // after the expectations: see StartServer
  auto stub = drav1::DRAPlugin::NewStub(Channel(options_.paths.dra_socket));
  drav1::NodePrepareResourcesRequest req;
  for (const char* uid : {"u1", "u2"}) {
    auto* c = req.add_claims();
    c->set_namespace_("ns");
    c->set_name(std::string("claim-") + uid);
    c->set_uid(uid);
  }
  drav1::NodePrepareResourcesResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->NodePrepareResources(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.claims().size(), 2u);
  const auto& u1 = resp.claims().at("u1");
  ASSERT_EQ(u1.devices_size(), 1);
  EXPECT_EQ(u1.devices(0).device_name(), "cpudevnuma000");
  EXPECT_EQ(u1.devices(0).pool_name(), "node-a");
  EXPECT_THAT(u1.devices(0).request_names(), ElementsAre("req"));
  EXPECT_THAT(u1.devices(0).cdi_device_ids(), ElementsAre("dra.k8s.io/cpu=claim-u1"));
  EXPECT_TRUE(u1.devices(0).has_share_id());
  EXPECT_EQ(u1.devices(0).share_id(), "share-1");
  EXPECT_THAT(resp.claims().at("u2").error(), HasSubstr("no allocation"));
}

TEST_F(KubeletPluginServerTest, UnpreparesThroughV1beta1) {
  EXPECT_CALL(preparer_, Unprepare(ElementsAre(Field(&ClaimRef::namespace_name, "ns"))))
      .WillOnce(Return(std::map<std::string, std::string>{{"u1", ""}}));
  StartServer();  // after the expectations: see StartServer
  auto stub = drav1beta1::DRAPlugin::NewStub(Channel(options_.paths.dra_socket));
  drav1beta1::NodeUnprepareResourcesRequest req;
  auto* c = req.add_claims();
  c->set_namespace_("ns");
  c->set_uid("u1");
  drav1beta1::NodeUnprepareResourcesResponse resp;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->NodeUnprepareResources(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.claims().count("u1"), 1u);
  EXPECT_EQ(resp.claims().at("u1").error(), "");
}

// The server keeps one idle poller, but calls still run side by side: each Prepare below waits
// until all of them are inside the preparer at once (the kubelet prepares pods in parallel).
TEST_F(KubeletPluginServerTest, PreparesRunConcurrently) {
  constexpr int kCalls = 4;
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  int most_inside = 0;
  EXPECT_CALL(preparer_, Prepare(_)).Times(kCalls).WillRepeatedly([&](const auto&) {
    std::unique_lock lock(mu);
    most_inside = std::max(most_inside, ++inside);
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return most_inside == kCalls; });
    --inside;
    return std::map<std::string, ClaimPrepareResult>{};
  });
  StartServer();  // after the expectations: see StartServer
  std::vector<std::thread> kubelets;
  for (int i = 0; i < kCalls; ++i) {
    kubelets.emplace_back([&] {
      auto stub = drav1::DRAPlugin::NewStub(Channel(options_.paths.dra_socket));
      drav1::NodePrepareResourcesRequest req;
      req.add_claims()->set_uid("u");
      drav1::NodePrepareResourcesResponse resp;
      grpc::ClientContext ctx;
      EXPECT_TRUE(stub->NodePrepareResources(&ctx, req, &resp).ok());
    });
  }
  for (std::thread& t : kubelets) t.join();
  std::lock_guard lock(mu);  // written on the handler threads
  EXPECT_EQ(most_inside, kCalls);
}

TEST_F(KubeletPluginServerTest, ReplacesStaleSocketsButNotOtherFiles) {
  // A stale socket from a previous run is removed.
  std::filesystem::create_directories(root_ + "/plugins_registry");
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s",
                options_.paths.registration_socket.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
  StartServer();
  server_->Shutdown();
  // A regular file where the socket should go is left alone and reported.
  std::filesystem::create_directories(options_.paths.plugin_dir);
  std::ofstream(options_.paths.dra_socket) << "not a socket";
  auto again = KubeletPluginServer::Start(options_, preparer_, nullptr);
  EXPECT_THAT(again, StatusIs(StatusCode::kFailedPrecondition, HasSubstr("is not a socket")));
}

TEST(PluginPaths, Rules) {
  auto p = MakePluginPaths("/var/lib/kubelet/");
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->registration_socket, "/var/lib/kubelet/plugins_registry/dra.cpu-reg.sock");
  EXPECT_EQ(p->dra_socket, "/var/lib/kubelet/plugins/dra.cpu/dra.sock");
  EXPECT_THAT(MakePluginPaths("var/lib/kubelet"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("absolute")));
  EXPECT_THAT(MakePluginPaths("/a/../../b"),
              IsOkAndHolds(Field(&PluginPaths::dra_socket, "/b/plugins/dra.cpu/dra.sock")));
  EXPECT_THAT(MakePluginPaths("/" + std::string(90, 'k')),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("at most 107")));
}

}  // namespace
}  // namespace dracpu::dra
