// Topology discovery on the largest corpus machine (ibm-power7-8numa-smt4: 256 CPUs, 8 NUMA
// nodes, 64 L3 groups, masks only), against a baseline that reads every file of the same tree
// once through the same FileSystem. Prints the ratio and the 20 ms target; asserts nothing.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "common/file_system.h"
#include "common/topology_discovery.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/sysfs_fixture.h"

namespace dracpu {

constexpr char kMachine[] = "ibm-power7-8numa-smt4";

struct Tree {
  std::unique_ptr<testing::TempDir> dir;
  std::unique_ptr<FileSystem> fs;
  std::vector<std::string> files;  // every regular file under sys/, root-relative
};
Tree* g_tree = nullptr;

void BM_DiscoverTopology(benchmark::State& state) {
  int cpus = 0;
  for (auto _ : state) {
    Result<CpuTopology> topo = DiscoverTopology(*g_tree->fs);
    if (!topo.ok()) {
      state.SkipWithError(topo.status().ToString().c_str());
      return;
    }
    cpus = topo->online.Count();
    benchmark::DoNotOptimize(topo);
  }
  state.counters["cpus"] = cpus;
}
BENCHMARK(BM_DiscoverTopology)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_ReadEveryFileOnce(benchmark::State& state) {
  size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (const std::string& path : g_tree->files) {
      Result<std::string> content = g_tree->fs->ReadFile(path);
      if (content.ok()) bytes += content->size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["files"] = static_cast<double>(g_tree->files.size());
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ReadEveryFileOnce)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Keeps each benchmark's mean real time per iteration to print the ratio at the end.
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

}  // namespace dracpu

int main(int argc, char** argv) {
  namespace testing = dracpu::testing;
  using dracpu::FileSystem;
  using dracpu::kMachine;
  using dracpu::Result;
  const std::optional<std::string> shared = testing::SharedDir();
  if (!shared) {
    std::printf("topology_bench: ../shared (DRACPU_SHARED_DIR) is absent: skipped\n");
    return 77;  // meson's "skipped"
  }
  Result<std::unique_ptr<testing::TempDir>> dir = testing::ExtractCorpusMachine(*shared, kMachine);
  if (!dir.ok()) {
    std::fprintf(stderr, "topology_bench: %s\n", dir.status().ToString().c_str());
    return 1;
  }
  Result<std::unique_ptr<FileSystem>> fs = dracpu::NewPosixFileSystem((*dir)->path());
  if (!fs.ok()) {
    std::fprintf(stderr, "topology_bench: %s\n", fs.status().ToString().c_str());
    return 1;
  }
  dracpu::Tree tree{std::move(dir).value(), std::move(fs).value(), {}};
  std::error_code ec;
  const std::filesystem::path root = tree.dir->path();
  for (std::filesystem::recursive_directory_iterator it(root / "sys", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
      tree.files.push_back(std::filesystem::relative(it->path(), root, ec).string());
    }
  }
  dracpu::g_tree = &tree;

  benchmark::Initialize(&argc, argv);
  dracpu::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double discover = reporter.ms_["BM_DiscoverTopology"];
  const double baseline = reporter.ms_["BM_ReadEveryFileOnce"];
  if (discover > 0 && baseline > 0) {
    std::printf(
        "%s (%zu files): discovery %.2f ms, reading every file once %.2f ms, ratio %.2f; "
        "target < 20 ms: %s\n",
        kMachine, tree.files.size(), discover, baseline, discover / baseline,
        discover < 20.0 ? "met" : "MISSED");
  }
  return 0;
}
