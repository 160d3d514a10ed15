// ResourceSlice publishing for a 1024-CPU machine in individual mode (1023 devices, 8 slices)
// against the in-process apiserver simulator on loopback: build the catalog, create a publisher,
// one sync (GET node, LIST, 8 POSTs). Baseline measured in the same run: 8 simulator GET round
// trips. Also a no-change re-sync (LIST + compare), and the CPU the idle publisher loop (watch
// open, nothing changing) costs, from the process CPU clock over an idle interval. Prints the
// ratio and the 200 ms target; asserts nothing.
#include <benchmark/benchmark.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/file_system.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/resources.h"
#include "dra-agent/slices/slice_document.h"
#include "dra-agent/slices/slice_publisher.h"
#include "tests/sim/apiserver/sim_apiserver.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu {
namespace {

constexpr char kNode[] = "node-1";

struct Env {
  std::unique_ptr<FileSystem> fs;
  SystemClock clock;
  DefaultRandom random;
  std::shared_ptr<sim::SimState> state;
  std::unique_ptr<sim::SimApiServer> server;
  std::unique_ptr<kube::KubeClient> client;
  CpuTopology topology;  // 8 sockets x 64 cores x 2 threads = 1024 CPUs
  dra::CatalogOptions catalog_options;
};
Env* g_env = nullptr;

void WipeSlices() {
  for (const std::string& text : g_env->state->ResourceSlices()) {
    const size_t at = text.find("\"name\":\"");
    const size_t end = text.find('"', at + 8);
    g_env->state->DeleteResourceSlice(text.substr(at + 8, end - at - 8));
  }
}

std::unique_ptr<dra::SlicePublisher> NewPublisher() {
  dra::SlicePublisherOptions o;
  o.node_name = kNode;
  auto p = dra::SlicePublisher::Create(*g_env->client, g_env->clock, g_env->random, o);
  return p.ok() ? *std::move(p) : nullptr;
}

void BM_BuildAndPublish1024Individual(benchmark::State& state) {
  int slices = 0;
  for (auto _ : state) {
    state.PauseTiming();
    WipeSlices();
    state.ResumeTiming();
    auto catalog = dra::BuildDeviceCatalog(g_env->topology, g_env->catalog_options);
    auto publisher = NewPublisher();
    if (!catalog.ok() || publisher == nullptr) {
      state.SkipWithError("catalog or publisher failed");
      return;
    }
    publisher->SetDesired(*std::move(catalog));
    const Status s = publisher->SyncOnce();
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    slices = publisher->stats().slices;
  }
  state.counters["slices"] = slices;
}
BENCHMARK(BM_BuildAndPublish1024Individual)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_ResyncUnchanged1024Individual(benchmark::State& state) {
  WipeSlices();
  auto catalog = dra::BuildDeviceCatalog(g_env->topology, g_env->catalog_options);
  auto publisher = NewPublisher();
  if (!catalog.ok() || publisher == nullptr) {
    state.SkipWithError("catalog or publisher failed");
    return;
  }
  publisher->SetDesired(*std::move(catalog));
  if (!publisher->SyncOnce().ok()) {
    state.SkipWithError("first sync failed");
    return;
  }
  for (auto _ : state) {
    const Status s = publisher->SyncOnce();
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  const auto st = publisher->stats();
  state.counters["writes"] = static_cast<double>(st.creates + st.updates + st.deletes);
}
BENCHMARK(BM_ResyncUnchanged1024Individual)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Baseline: 8 GET round trips to the simulator over the same client (one per slice written).
void BM_Baseline8SimGets(benchmark::State& state) {
  const std::string path = kube::NodePath(kNode);
  for (auto _ : state) {
    for (int i = 0; i < 8; ++i) {
      auto node = g_env->client->Get(path);
      if (!node.ok()) {
        state.SkipWithError(node.status().ToString().c_str());
        return;
      }
      benchmark::DoNotOptimize(node);
    }
  }
}
BENCHMARK(BM_Baseline8SimGets)->Unit(benchmark::kMillisecond)->MinTime(1.0);

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration && run.iterations > 0) {
        ms_[run.run_name.function_name] =
            run.real_accumulated_time * 1e3 / static_cast<double>(run.iterations);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> ms_;
};

double ProcessCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The publisher's Run loop with its watch open and nothing changing, for `idle`: the process
// CPU time spent (simulator included: it serves the watch and sends a bookmark every second).
void MeasureIdle(std::chrono::milliseconds idle) {
  WipeSlices();
  auto catalog = dra::BuildDeviceCatalog(g_env->topology, g_env->catalog_options);
  auto publisher = NewPublisher();
  if (!catalog.ok() || publisher == nullptr) return;
  publisher->SetDesired(*std::move(catalog));
  std::jthread run([&](std::stop_token stop) { publisher->Run(stop); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (publisher->stats().syncs < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let the initial syncs settle
  const uint64_t syncs_before = publisher->stats().syncs;
  const double cpu0 = ProcessCpuMs();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(idle);
  const double cpu = ProcessCpuMs() - cpu0;
  const double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t syncs = publisher->stats().syncs - syncs_before;
  run.request_stop();
  run.join();
  std::printf(
      "idle publisher loop (watch open, simulator in-process): %.2f ms CPU over %.0f ms "
      "wall = %.3f%% of one core; %llu syncs while idle\n",
      cpu, wall, 100.0 * cpu / wall, static_cast<unsigned long long>(syncs));
}

}  // namespace
}  // namespace dracpu

int main(int argc, char** argv) {
  using namespace dracpu;
  Env env;
  auto fs = NewPosixFileSystem("/");
  if (!fs.ok()) return 1;
  env.fs = *std::move(fs);
  env.state = std::make_shared<sim::SimState>();
  env.state->AddNode(kNode, "uid-node-1");
  auto server = sim::SimApiServer::Start({}, env.state);
  if (!server.ok()) {
    std::fprintf(stderr, "slices_bench: %s\n", server.status().ToString().c_str());
    return 1;
  }
  env.server = *std::move(server);
  kube::ClusterConfig config;
  config.server = env.server->url();
  auto http = kube::NewCurlHttpClient(config.tls);
  if (!http.ok()) return 1;
  auto client = kube::KubeClient::Create(config, *std::move(http), *env.fs, env.clock, env.random);
  if (!client.ok()) return 1;
  env.client = *std::move(client);
  env.topology = testing::SyntheticTopology({8, 1, 64, 2});
  env.catalog_options.mode = CpuDeviceMode::kIndividual;
  g_env = &env;

  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double publish = reporter.ms_["BM_BuildAndPublish1024Individual"];
  const double resync = reporter.ms_["BM_ResyncUnchanged1024Individual"];
  const double baseline = reporter.ms_["BM_Baseline8SimGets"];
  if (publish > 0 && baseline > 0) {
    std::printf(
        "1024 CPUs, individual mode, 8 slices: build + publish %.2f ms, unchanged re-sync "
        "%.2f ms, baseline 8 simulator GETs %.2f ms; ratio publish/baseline %.1f; "
        "target < 200 ms: %s\n",
        publish, resync, baseline, publish / baseline, publish < 200.0 ? "met" : "MISSED");
  }
  MeasureIdle(std::chrono::milliseconds(3000));
  env.server->Stop();
  return 0;
}
