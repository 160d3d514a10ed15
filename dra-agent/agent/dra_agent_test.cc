// DraAgent's unit test: the whole agent on fakes from its DraEnv (a temp-dir host filesystem, a
// synthetic sysfs tree, a FakeClock, the in-process API server simulator, a kubelet server that
// hands the test the agent's ClaimPreparer instead of opening sockets): start, a Prepare and an
// Unprepare, a stop signal to the event loop, stop. Nothing waits on real time.
#include "dra-agent/agent/dra_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/unique_fd.h"
#include "tests/sim/apiserver/in_process_http_client.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/sysfs_fixture.h"
#include "tests/testing/temp_dir.h"

namespace dracpu::dra {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kNode[] = "node-a";
constexpr char kUid[] = "11111111-2222-4333-8444-555555555555";

// Stands in for the gRPC server: keeps the agent's preparer and the registration callback.
class FakeKubeletServer final : public KubeletPluginServer {
 public:
  FakeKubeletServer(ClaimPreparer& preparer, RegistrationStatusCallback on_status)
      : preparer_(preparer), on_status_(std::move(on_status)) {}
  void Shutdown() override { shut_down_ = true; }
  bool registered() const override { return registered_; }
  int get_info_calls() const override { return 0; }

  // What the kubelet would do after GetInfo.
  void Register() {
    registered_ = true;
    if (on_status_) on_status_(true, "");
  }
  ClaimPreparer& preparer() { return preparer_; }
  bool shut_down() const { return shut_down_; }

 private:
  ClaimPreparer& preparer_;
  const RegistrationStatusCallback on_status_;
  bool registered_ = false;
  bool shut_down_ = false;
};

// One socket, two cores with two threads each (siblings 0,2 and 1,3), one NUMA node.
std::unique_ptr<testing::SysfsFixture> TwoCoreSysfs() {
  auto f = testing::SysfsFixture::Create();
  EXPECT_THAT(f, IsOk());
  testing::SysfsFixture& s = **f;
  s.CpuFile("online", "0-3\n").CpuFile("present", "0-3\n").CpuFile("possible", "0-3\n");
  for (int cpu = 0; cpu < 4; ++cpu) {
    testing::SysfsFixture::CpuSpec spec;
    spec.core_id = cpu % 2;
    spec.siblings = cpu % 2 == 0 ? "0,2" : "1,3";
    spec.node = 0;
    s.Cpu(cpu, spec);
  }
  s.Node(0, "0-3", "10");
  return std::move(f).value();
}

std::string ClaimJson() {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"c","namespace":"ns","uid":")" +
         std::string(kUid) + R"("},
    "spec":{"devices":{"requests":[{"name":"cpus"}]}},
    "status":{"allocation":{"devices":{"results":[
      {"request":"cpus","driver":"dra.cpu","pool":"node-a","device":"cpudevnuma000",
       "consumedCapacity":{"dra.cpu/cpu":"2"}}]}}}})";
}

class DraAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto host = NewPosixFileSystem(root_.path());
    ASSERT_THAT(host, IsOk());
    host_ = std::move(host).value();
    auto sysfs = sysfs_tree_->Fs();
    ASSERT_THAT(sysfs, IsOk());
    sysfs_ = std::move(sysfs).value();
    sim::SimState::Options so;
    state_ = std::make_shared<sim::SimState>(so);
    state_->AddNode(kNode, "uid-node-a");
    ASSERT_TRUE(state_->PutResourceClaim(ClaimJson()));

    // Paths in the host filesystem are root-relative; the segment is a real file.
    config_.node_name = kNode;
    config_.cdi_root = "/var/run/cdi";
    config_.kubelet_root_dir = "/var/lib/kubelet";
    config_.shm_path = root_.path() + "/run/dracpu/state.shm";
    config_.bind_address = "127.0.0.1:0";
  }

  DraEnv Env() {
    return DraEnv{
        .host = *host_,
        .sysfs = *sysfs_,
        .clock = clock_,
        .wall_time = [] { return std::string("2026-01-02T03:04:05Z"); },
        .random = random_,
        .kube_client =
            [this] { return sim::NewInProcessKubeClient(state_, *host_, clock_, random_); },
        .kubelet_server = [this](const KubeletPluginServerOptions& options, ClaimPreparer& preparer,
                                 RegistrationStatusCallback on_status)
            -> Result<std::unique_ptr<KubeletPluginServer>> {
          kubelet_options_ = options;
          auto server = std::make_unique<FakeKubeletServer>(preparer, std::move(on_status));
          kubelet_ = server.get();
          return std::unique_ptr<KubeletPluginServer>(std::move(server));
        },
    };
  }

  testing::TempDir root_{"dracpu-agent"};
  std::unique_ptr<testing::SysfsFixture> sysfs_tree_ = TwoCoreSysfs();
  std::unique_ptr<FileSystem> host_;
  std::unique_ptr<FileSystem> sysfs_;
  // Virtual time; the slice publisher's retries of the (unserved) watch yield 1 ms each.
  testing::FakeClock clock_{std::chrono::milliseconds(1)};
  testing::FixedRandom random_{0.25};
  std::shared_ptr<sim::SimState> state_;
  AgentConfig config_;
  KubeletPluginServerOptions kubelet_options_;
  FakeKubeletServer* kubelet_ = nullptr;  // owned by the agent
};

TEST_F(DraAgentTest, StartPrepareSignalStop) {
  auto agent = DraAgent::Start(config_, "test", Env());
  ASSERT_THAT(agent, IsOk());
  ASSERT_NE(kubelet_, nullptr);
  EXPECT_EQ((*agent)->topology().online.ToListString(), "0-3");
  EXPECT_EQ(kubelet_options_.paths.dra_socket, "/var/lib/kubelet/plugins/dra.cpu/dra.sock");
  EXPECT_NE(kubelet_options_.health, nullptr);
  EXPECT_THAT(kubelet_options_.supported_versions,
              ElementsAre("v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                          "v1alpha1.DRAResourceHealth"));
  EXPECT_FALSE((*agent)->registered());
  kubelet_->Register();
  EXPECT_TRUE((*agent)->registered());

  // A Prepare as the kubelet makes it: two CPUs of the node's one device, a CDI spec in the
  // host filesystem, the claim in shared memory.
  auto prepared = kubelet_->preparer().Prepare({{"ns", "c", kUid}});
  ASSERT_EQ(prepared.count(kUid), 1u);
  const ClaimPrepareResult& r = prepared.at(kUid);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].device_name, "cpudevnuma000");
  EXPECT_EQ(r.devices[0].pool_name, kNode);
  const std::string cdi_dir = root_.path() + "/var/run/cdi";
  bool found_spec = false;
  for (const auto& e : std::filesystem::directory_iterator(cdi_dir)) {
    found_spec |= e.path().filename().string().find(kUid) != std::string::npos;
  }
  EXPECT_TRUE(found_spec) << "no CDI spec for the claim in " << cdi_dir;

  // The event loop returns at once when its stop fd is readable (main's signalfd).
  UniqueFd stop(::eventfd(1, EFD_CLOEXEC));
  ASSERT_TRUE(stop.valid());
  int beats = 0;
  EXPECT_THAT((*agent)->Run(stop.get(), [&beats] { ++beats; }), IsOk());
  EXPECT_EQ(beats, 1);

  auto unprepared = kubelet_->preparer().Unprepare({{"ns", "c", kUid}});
  EXPECT_EQ(unprepared.at(kUid), "");
  (*agent)->Stop();
  EXPECT_TRUE(kubelet_->shut_down());
}

// Run's timers are on the injected clock: each heartbeat here moves virtual time on by one
// interval, so the loop runs the next heartbeat at once, and the topology poll every second
// one, which sees CPU 3 go offline (the hotplug path: shared memory's online CPUs).
TEST_F(DraAgentTest, RunsHeartbeatsAndTopologyPollsOnTheInjectedClock) {
  auto agent = DraAgent::Start(config_, "test", Env());
  ASSERT_THAT(agent, IsOk());
  ASSERT_THAT(sysfs_tree_->CpuFile("online", "0-2\n").status(), IsOk());
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(stop.valid());
  int beats = 0;
  EXPECT_THAT((*agent)->Run(stop.get(),
                            [&] {
                              if (++beats < 5) {
                                clock_.Advance(std::chrono::seconds(5));
                              } else {
                                const uint64_t one = 1;
                                ASSERT_EQ(::write(stop.get(), &one, sizeof one), 8);
                              }
                            }),
              IsOk());
  EXPECT_EQ(beats, 5);
  shm::OpenOptions reader;
  auto segment = shm::Segment::Open(config_.shm_path, reader);
  ASSERT_THAT(segment, IsOk());
  auto snapshot = (*segment)->ReadSnapshot();
  ASSERT_THAT(snapshot, IsOk());
  EXPECT_EQ(snapshot->topology.online.ToListString(), "0-2");
  (*agent)->Stop();
}

TEST_F(DraAgentTest, StartFailsWithTheClientFactorysError) {
  DraEnv env = Env();
  env.kube_client = []() -> Result<std::unique_ptr<kube::KubeClient>> {
    return UnavailableError("no kubeconfig");
  };
  EXPECT_THAT(DraAgent::Start(config_, "test", std::move(env)),
              StatusIs(StatusCode::kUnavailable, HasSubstr("no kubeconfig")));
  EXPECT_EQ(kubelet_, nullptr);
}

}  // namespace
}  // namespace dracpu::dra
