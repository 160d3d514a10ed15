// Allocator latency on a 1024-CPU machine (8 sockets x 64 cores x SMT2, 8 L3 groups of 8 cores
// per socket) with half of it busy, for requests of 1, 8, 64 and 256 CPUs. Targets (issue 3):
// median under 50 us up to 64 CPUs, under 500 us for 256. The baseline is one pass over the
// candidate set (each free CPU mapped to its core), measured in the same run; the summary prints
// each median and its ratio to that baseline.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "dra-agent/allocator/allocator.h"
#include "dra-agent/allocator/topology_builder.h"
#include "dra-agent/allocator/topology_index.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::allocator {
namespace {

struct Machine {
  TopologyIndex index;
  CpuSet free;
};

const Machine& HalfBusy() {
  static const Machine* machine = [] {
    Result<CpuTopology> topo =
        BuildTopologyFromRecords(testing::SyntheticRecords({8, 1, 64, 2, 8}));
    if (!topo.ok()) std::abort();
    Result<TopologyIndex> index = TopologyIndex::Build(*topo);
    if (!index.ok()) std::abort();
    // Per core: 40% wholly busy, 20% one thread busy, 40% free -> half the CPUs busy.
    std::mt19937 rng(2026);
    CpuSet free = topo->online;
    for (const Core& core : topo->cores) {
      const unsigned roll = rng() % 10;
      if (roll < 4)
        free -= core.cpus;
      else if (roll < 6)
        free.Clear(core.cpus.Last());
    }
    return new Machine{*std::move(index), free};
  }();
  return *machine;
}

void BM_BaselineOnePass(benchmark::State& state) {
  const Machine& m = HalfBusy();
  for (auto _ : state) {
    long sum = 0;
    for (int cpu : m.free) sum += m.index.CoreOf(cpu);
    benchmark::DoNotOptimize(sum);
  }
}

void BM_Allocate(benchmark::State& state) {
  const Machine& m = HalfBusy();
  const PlacementPolicy options;
  const AllocationRequest request{m.free, static_cast<int>(state.range(0)), {}, {}};
  for (auto _ : state) {
    Result<CpuSet> cpus = Allocate(m.index, request, options);
    if (!cpus.ok()) state.SkipWithError(cpus.status().message().c_str());
    benchmark::DoNotOptimize(cpus);
  }
}

BENCHMARK(BM_BaselineOnePass)->Unit(benchmark::kMicrosecond)->Repetitions(9);
BENCHMARK(BM_Allocate)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->Arg(256)
    ->Unit(benchmark::kMicrosecond)
    ->Repetitions(9);

// Console output plus the medians, for the summary.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> medians;      // name -> wall-clock microseconds
  std::map<std::string, double> cpu_medians;  // name -> CPU microseconds
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        std::string name = r.run_name.str();
        medians[name] = r.GetAdjustedRealTime();
        cpu_medians[name] = r.GetAdjustedCPUTime();
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace
}  // namespace dracpu::allocator

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  dracpu::allocator::MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& medians = reporter.medians;
  auto base = medians.find("BM_BaselineOnePass/repeats:9");
  if (base == medians.end()) return 0;
  const double base_cpu = reporter.cpu_medians[base->first];
  std::printf(
      "\nallocator on 1024 CPUs, half busy (%d free): median wall time, ratio to one pass "
      "over the candidates (%.3f us wall, %.3f us CPU), target; median CPU time\n",
      dracpu::allocator::HalfBusy().free.Count(), base->second, base_cpu);
  for (int n : {1, 8, 64, 256}) {
    const std::string name = "BM_Allocate/" + std::to_string(n) + "/repeats:9";
    auto it = medians.find(name);
    if (it == medians.end()) continue;
    const double target = n <= 64 ? 50 : 500;
    const double cpu = reporter.cpu_medians[name];
    std::printf(
        "  request %4d: %9.2f us  %6.1fx  target < %3.0f us  %-6s  (CPU %8.2f us, %5.1fx)\n", n,
        it->second, it->second / base->second, target, it->second < target ? "met" : "MISSED", cpu,
        cpu / base_cpu);
  }
  benchmark::Shutdown();
  return 0;
}
