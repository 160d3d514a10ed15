// NodePrepareResources latency (issue 6, item 10): one grouped claim of 8 CPUs on a 1024-CPU
// machine (8 sockets x 64 cores x SMT2) with half of it already claimed, through the real
// kubelet-facing gRPC server on a unix socket, the ResourceClaim read from the kube-apiserver
// simulator on loopback, shared memory and CDI on tmpfs (/dev/shm). Targets: median < 2 ms,
// p99 < 5 ms. Printed with the ratio to a bare gRPC unary round trip over a unix socket (GetInfo
// on the registration socket) measured in the same run. Each iteration's claim is unprepared
// outside the timed region.
//
// Durable but cheap (issue 15, item 4): Prepare of 1, 8 and 32 claims in one call with the CDI
// directory on tmpfs and on a disk-backed directory (/var/tmp, or DRACPU_BENCH_DISK_DIR: a
// journalled filesystem, say, where this machine's /var/tmp is ext4 without one), each printed as a
// ratio to the one-claim call on the same directory (target on disk: 8 claims < 2x one claim) and
// to an empty fsync there (create an empty file, fsync it and its directory: the least a durable
// write pays). The tmpfs calls run again with every claim GET answered after 1 ms (an API server a
// round trip away), printed against the 1 ms per claim that GETs one after another would wait.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "dra-agent/allocator/topology_index.h"
#include "dra-agent/cdi/cdi_store.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/resources.h"
#include "dra-agent/kubelet/kubelet_plugin_server.h"
#include "dra-agent/prepare/cpu_claim_preparer.h"
#include "dra_v1.grpc.pb.h"
#include "pluginregistration.grpc.pb.h"
#include "shm-schema/segment.h"
#include "tests/sim/apiserver/sim_apiserver.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu {
namespace {

using Clock = std::chrono::steady_clock;
// The bench is the kubelet's side of the gRPC calls: it speaks the generated client stubs itself.
namespace drav1 = ::k8s::io::kubelet::pkg::apis::dra::v1;

std::string ClaimJson(const std::string& uid, const std::string& device, int count) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"namespace":"bench","name":"c-)" +
         uid + R"(","uid":")" + uid +
         R"("},"status":{"allocation":{"devices":{"results":[{"request":"r","driver":"dra.cpu","pool":"node-a","device":")" +
         device + R"(","consumedCapacity":{"dra.cpu/cpu":")" + std::to_string(count) +
         R"("}}]}}}})";
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

struct Fixture {
  std::string dir;
  std::string cdi_dir;
  std::shared_ptr<sim::SimState> state = std::make_shared<sim::SimState>();
  std::unique_ptr<sim::SimApiServer> api;
  SystemClock clock;
  DefaultRandom random;
  std::unique_ptr<FileSystem> fs;
  std::unique_ptr<kube::KubeClient> client;
  CpuTopology topology = testing::SyntheticTopology({8, 1, 64, 2});
  std::unique_ptr<allocator::TopologyIndex> index;
  dra::DeviceCatalog catalog;
  std::unique_ptr<shm::Segment> segment;
  std::unique_ptr<dra::CdiStore> cdi;
  std::unique_ptr<dra::CpuClaimPreparer> preparer;
  std::unique_ptr<dra::KubeletPluginServer> server;
  std::unique_ptr<drav1::DRAPlugin::Stub> stub;
  std::unique_ptr<pluginregistration::Registration::Stub> registration;
  bool ok = false;

  // `cdi_base`: where the CDI directory goes (tmpfs or disk); shared memory is always on tmpfs.
  explicit Fixture(const std::string& cdi_base = "/dev/shm") {
    char tmpl[] = "/dev/shm/dracpu-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    dir = tmpl;
    std::string cdi_tmpl = cdi_base + "/dracpu-bench-cdi-XXXXXX";
    if (::mkdtemp(cdi_tmpl.data()) == nullptr) return;
    cdi_dir = cdi_tmpl;
    api = sim::SimApiServer::Start({}, state).value();
    state->AddNode("node-a", "uid-node-a");
    fs = NewPosixFileSystem("/").value();
    kube::ClusterConfig cc;
    cc.server = api->url();
    client = kube::KubeClient::Create(cc, kube::NewCurlHttpClient({}).value(), *fs, clock, random)
                 .value();
    index = std::make_unique<allocator::TopologyIndex>(
        allocator::TopologyIndex::Build(topology).value());
    catalog = dra::BuildDeviceCatalog(topology, {}).value();
    shm::OpenOptions so;
    so.role = shm::Role::kDraAgent;
    so.create_if_missing = true;
    so.node_name = "node-a";
    segment = shm::Segment::Open(dir + "/state.shm", so).value();
    cdi = std::make_unique<dra::CdiStore>(*fs, cdi_dir + "/cdi");
    if (!cdi->EnsureDirectory().ok()) return;
    dra::PreparerOptions po;
    po.pool_name = "node-a";
    kube::KubeClient* c = client.get();
    preparer = std::make_unique<dra::CpuClaimPreparer>(
        topology, *index, catalog, *segment, *cdi,
        [c](const std::string& ns, const std::string& name) -> Result<std::string> {
          return c->GetBody(kube::ResourceClaimPath(ns, name));
        },
        po, nullptr, clock);
    dra::KubeletPluginServerOptions ko;
    ko.paths = dra::MakePluginPaths(dir + "/k").value();
    server = dra::KubeletPluginServer::Start(ko, *preparer, nullptr).value();
    stub = drav1::DRAPlugin::NewStub(
        grpc::CreateChannel("unix:" + ko.paths.dra_socket, grpc::InsecureChannelCredentials()));
    registration = pluginregistration::Registration::NewStub(grpc::CreateChannel(
        "unix:" + ko.paths.registration_socket, grpc::InsecureChannelCredentials()));
    // Half the machine busy: 4 claims of 64 CPUs on every NUMA node... 256 CPUs per two nodes.
    for (int i = 0; i < 32; ++i) {
      const std::string uid = "busy" + std::to_string(i);
      state->PutResourceClaim(ClaimJson(uid, dra::NumaDeviceName(i % 8), 16));
      if (!preparer->Prepare({{"bench", "c-" + uid, uid}}).at(uid).error.empty()) return;
    }
    ok = true;
  }
  ~Fixture() {
    server.reset();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    if (!cdi_dir.empty()) std::filesystem::remove_all(cdi_dir, ec);
  }
};

// Made on first use; main() ends them (their servers, simulators and temp directories).
std::unique_ptr<Fixture> g_tmpfs_fixture;
std::unique_ptr<Fixture> g_disk_fixture;

Fixture& F() {
  if (!g_tmpfs_fixture) g_tmpfs_fixture = std::make_unique<Fixture>();
  return *g_tmpfs_fixture;
}

double BaselineMicros() {
  static double median = [] {
    std::vector<double> v;
    for (int i = 0; i < 2000; ++i) {
      grpc::ClientContext ctx;
      pluginregistration::PluginInfo info;
      const auto t = Clock::now();
      (void)F().registration->GetInfo(&ctx, pluginregistration::InfoRequest(), &info);
      v.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
    }
    return Percentile(v, 0.5);
  }();
  return median;
}

void BM_GrpcUnaryRoundTrip(benchmark::State& state) {
  if (!F().ok) return state.SkipWithError("fixture setup failed");
  for (auto _ : state) {
    grpc::ClientContext ctx;
    pluginregistration::PluginInfo info;
    benchmark::DoNotOptimize(
        F().registration->GetInfo(&ctx, pluginregistration::InfoRequest(), &info));
  }
}
BENCHMARK(BM_GrpcUnaryRoundTrip)->UseRealTime();

void BM_PrepareGroupedClaim(benchmark::State& state) {
  Fixture& f = F();
  if (!f.ok) return state.SkipWithError("fixture setup failed");
  const double baseline = BaselineMicros();
  std::vector<double> micros;
  int i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string uid = "claim" + std::to_string(i++);
    f.state->PutResourceClaim(ClaimJson(uid, dra::NumaDeviceName(i % 8), 8));
    drav1::NodePrepareResourcesRequest req;
    auto* c = req.add_claims();
    c->set_namespace_("bench");
    c->set_name("c-" + uid);
    c->set_uid(uid);
    drav1::NodePrepareResourcesResponse resp;
    grpc::ClientContext ctx;
    state.ResumeTiming();
    const auto t = Clock::now();
    const grpc::Status s = f.stub->NodePrepareResources(&ctx, req, &resp);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
    state.PauseTiming();
    if (!s.ok() || !resp.claims().at(uid).error().empty()) {
      state.SkipWithError(
          ("prepare failed: " + (s.ok() ? resp.claims().at(uid).error() : s.error_message()))
              .c_str());
      break;
    }
    f.preparer->Unprepare({{"bench", "c-" + uid, uid}});
    state.ResumeTiming();
  }
  const double median = Percentile(micros, 0.5), p99 = Percentile(micros, 0.99);
  state.counters["median_us"] = median;
  state.counters["p99_us"] = p99;
  state.counters["x_grpc_rtt"] = baseline > 0 ? median / baseline : 0;
  std::printf(
      "\nPrepare of one 8-CPU grouped claim, 1024 CPUs half busy: median %.0f us (target < 2000), "
      "p99 %.0f us (target < 5000); %.1fx a bare gRPC unary round trip (%.0f us)\n",
      median, p99, baseline > 0 ? median / baseline : 0, baseline);
}
BENCHMARK(BM_PrepareGroupedClaim)->UseRealTime()->Iterations(500);

// --- issue 15, item 4: one call of N claims, CDI on tmpfs or on disk -------------------------

std::string DiskDirectory() {
  const char* dir = std::getenv("DRACPU_BENCH_DISK_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/var/tmp";
}

Fixture& DiskFixture() {
  if (!g_disk_fixture) g_disk_fixture = std::make_unique<Fixture>(DiskDirectory());
  return *g_disk_fixture;
}

// Create an empty file, fsync it, fsync the directory, remove it: the floor of one durable write
// in `dir`. Median of `rounds`, in µs.
double EmptyFsyncMicros(const std::string& dir, int rounds = 40) {
  std::vector<double> v;
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < rounds; ++i) {
    const std::string path = dir + "/empty-" + std::to_string(i);
    const auto t = Clock::now();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    ::fsync(dfd);
    v.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
    ::unlink(path.c_str());
  }
  if (dfd >= 0) ::close(dfd);
  return Percentile(v, 0.5);
}

// Median µs of Prepare calls of `n` claims (8 CPUs each, on the NUMA nodes in turn).
struct BatchFigures {
  double median_us = 0;
  double p99_us = 0;
};
// Keyed by (disk, API delay in ms, claims).
std::map<std::tuple<bool, int, int>, BatchFigures>& BatchResults() {
  static std::map<std::tuple<bool, int, int>, BatchFigures> results;
  return results;
}

void BM_PrepareClaimsInOneCall(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool disk = state.range(1) != 0;
  const int api_delay_ms = static_cast<int>(state.range(2));
  Fixture& f = disk ? DiskFixture() : F();
  if (!f.ok) return state.SkipWithError("fixture setup failed");
  // A cluster's API server is a network round trip away: each claim's GET answered after
  // `api_delay_ms` (the simulator's delay fault), for as long as this benchmark runs.
  if (api_delay_ms > 0) {
    sim::Fault slow;
    slow.method = "GET";
    slow.path_prefix = "/apis/resource.k8s.io/";
    slow.action = sim::FaultAction::kDelay;
    slow.delay = std::chrono::milliseconds(api_delay_ms);
    slow.count = -1;
    f.state->AddFault(slow);
  }
  std::vector<double> micros;
  std::vector<double> unprepare_micros;  // the same claims released in one call, not timed
  static int serial = 0;
  for (auto _ : state) {
    state.PauseTiming();
    drav1::NodePrepareResourcesRequest req;
    std::vector<dra::ClaimRef> refs;
    for (int k = 0; k < n; ++k) {
      const std::string uid = "batch" + std::to_string(serial++);
      f.state->PutResourceClaim(ClaimJson(uid, dra::NumaDeviceName(k % 8), 8));
      auto* c = req.add_claims();
      c->set_namespace_("bench");
      c->set_name("c-" + uid);
      c->set_uid(uid);
      refs.push_back({"bench", "c-" + uid, uid});
    }
    drav1::NodePrepareResourcesResponse resp;
    grpc::ClientContext ctx;
    state.ResumeTiming();
    const auto t = Clock::now();
    const grpc::Status s = f.stub->NodePrepareResources(&ctx, req, &resp);
    micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
    state.PauseTiming();
    if (!s.ok()) {
      state.SkipWithError(("prepare failed: " + s.error_message()).c_str());
      break;
    }
    for (const auto& [uid, r] : resp.claims()) {
      if (!r.error().empty()) state.SkipWithError(("prepare failed: " + r.error()).c_str());
    }
    const auto u = Clock::now();
    f.preparer->Unprepare(refs);
    unprepare_micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - u).count());
    state.ResumeTiming();
  }
  if (api_delay_ms > 0) f.state->ClearFaults();
  BatchFigures b{Percentile(micros, 0.5), Percentile(micros, 0.99)};
  BatchResults()[{disk, api_delay_ms, n}] = b;
  state.counters["median_us"] = b.median_us;
  state.counters["p99_us"] = b.p99_us;
  state.counters["unprepare_median_us"] = Percentile(unprepare_micros, 0.5);
  if (const auto one = BatchResults().find({disk, api_delay_ms, 1}); one != BatchResults().end()) {
    state.counters["x_one_claim"] = b.median_us / one->second.median_us;
  }
}
BENCHMARK(BM_PrepareClaimsInOneCall)
    ->ArgsProduct({{1, 8, 32}, {0, 1}, {0}})
    ->ArgsProduct({{1, 8, 32}, {0}, {1}})
    ->ArgNames({"claims", "disk", "api_ms"})
    ->UseRealTime()
    ->Iterations(100);

// The summary of item 4, after every batch benchmark ran.
void PrintBatchSummaryInternal() {
  if (BatchResults().empty()) return;
  std::printf("\nPrepare of N claims in one call (median of 100 calls; each claim 8 CPUs):\n");
  for (const bool disk : {false, true}) {
    Fixture& f = disk ? DiskFixture() : F();
    if (!f.ok) continue;
    const double fsync_us = EmptyFsyncMicros(f.cdi_dir);
    const auto one = BatchResults().find({disk, 0, 1});
    if (one == BatchResults().end()) continue;
    const std::string where = disk ? "disk (" + DiskDirectory() + "):" : "tmpfs (/dev/shm):";
    std::printf("  CDI on %-22s empty fsync %7.0f us\n", where.c_str(), fsync_us);
    for (const int n : {1, 8, 32}) {
      const auto it = BatchResults().find({disk, 0, n});
      if (it == BatchResults().end()) continue;
      std::printf("    %2d claims: %8.0f us = %5.2fx one claim, %6.1fx an empty fsync%s\n", n,
                  it->second.median_us, it->second.median_us / one->second.median_us,
                  it->second.median_us / fsync_us,
                  disk && n == 8 ? (it->second.median_us < 2 * one->second.median_us
                                        ? "  (target < 2x one claim: met)"
                                        : "  (target < 2x one claim: MISSED)")
                                 : "");
    }
  }
  // The claims' GETs overlap (claim_fetch.h): one after the other, a call would wait at least
  // one API round trip per claim.
  const auto slow_one = BatchResults().find({false, 1, 1});
  if (slow_one == BatchResults().end()) return;
  std::printf("  CDI on tmpfs, each GET answered after 1 ms (an API server a round trip away):\n");
  for (const int n : {1, 8, 32}) {
    const auto it = BatchResults().find({false, 1, n});
    if (it == BatchResults().end()) continue;
    std::printf(
        "    %2d claims: %8.0f us = %5.2fx one claim, %5.2fx the %d ms of %d GETs in turn\n", n,
        it->second.median_us, it->second.median_us / slow_one->second.median_us,
        it->second.median_us / (1000.0 * n), n, n);
  }
}

}  // namespace

void PrintBatchSummary() { PrintBatchSummaryInternal(); }
}  // namespace dracpu

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  dracpu::PrintBatchSummary();
  dracpu::g_tmpfs_fixture.reset();
  dracpu::g_disk_fixture.reset();
  benchmark::Shutdown();
  return 0;
}
