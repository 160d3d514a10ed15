// Fragmentation replay (allocation.md §(d)8, "no look-ahead"): seeded random sequences of
// allocations and releases on a 2-socket EPYC-like machine (2 NUMA nodes, 24 L3 groups of 8
// cores x SMT2), run once with our allocator and once with a greedy baseline that follows
// kubelet's takeByTopologyNUMAPacked with uncore alignment (written here, from the spec's step
// list). Reports, and checks, the admission rate of full-L3 requests: a 16-CPU request is
// admitted when it can be placed inside one L3 group.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <tuple>
#include <vector>

#include "dra-agent/allocator/allocator.h"
#include "dra-agent/allocator/placement_metrics.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/synthetic_topology.h"

namespace dracpu::allocator {
namespace {

constexpr int kL3Size = 16;

// kubelet's packed algorithm (allocation.md §(a)) with NUMA nodes as the first level (exact for
// machines with one NUMA node per socket, a valid greedy placement on the others); every sort is
// ascending free CPUs, then id.
CpuSet GreedyTake(const CpuTopology& t, const CpuSet& free, int n) {
  CpuSet result;
  CpuSet avail = free;
  auto take = [&](const CpuSet& s) {
    result |= s;
    avail -= s;
    n -= s.Count();
  };
  auto by_free = [&](const auto& groups) {
    std::vector<std::pair<int, const CpuGroup*>> keyed;
    for (const auto& g : groups) keyed.push_back({g.cpus.CountIntersection(avail), &g});
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<const CpuGroup*> order;
    for (const auto& k : keyed) order.push_back(k.second);
    return order;
  };
  std::vector<CpuGroup> numas;
  for (const NumaNode& node : t.numa_nodes) numas.push_back({node.id, node.cpus});
  // 1. Whole free NUMA nodes.
  for (const CpuGroup* g : by_free(numas)) {
    if (g->cpus.IsSubsetOf(avail) && n >= g->cpus.Count()) take(g->cpus);
  }
  // 2. Uncore step: L3 groups by NUMA (ascending free), then by L3 (ascending free).
  for (const CpuGroup* node : by_free(numas)) {
    std::vector<CpuGroup> l3s;
    for (const CpuGroup& l3 : t.l3_caches) {
      if (l3.cpus.Intersects(node->cpus)) l3s.push_back(l3);
    }
    for (const CpuGroup* l3 : by_free(l3s)) {
      if (n <= 0) break;
      if (n >= kL3Size) {
        if (l3->cpus.IsSubsetOf(avail)) take(l3->cpus);
        continue;
      }
      // Partial: the ceil(n/2) lowest-id cores with any free CPU; claim only an exact fit.
      CpuSet partial;
      int cores = (n + 1) / 2;
      for (const Core& core : t.cores) {
        if (cores == 0) break;
        if (!core.cpus.IsSubsetOf(l3->cpus) || !core.cpus.Intersects(avail)) continue;
        partial |= core.cpus & avail;
        --cores;
      }
      if (n % 2 == 1 && partial.Count() > n) partial.Clear(partial.Last());
      if (partial.Count() == n) take(partial);
    }
  }
  // 3. Whole free cores, NUMA order, then 4. single CPUs on the fullest cores first.
  for (const CpuGroup* node : by_free(numas)) {
    for (const Core& core : t.cores) {
      if (n >= 2 && node->cpus.Contains(core.id) && core.cpus.IsSubsetOf(avail)) take(core.cpus);
    }
  }
  std::vector<std::pair<int, const Core*>> cores;  // (free CPUs, core)
  for (const Core& core : t.cores) cores.push_back({core.cpus.CountIntersection(avail), &core});
  std::stable_sort(cores.begin(), cores.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [count, core] : cores) {
    for (int cpu : core->cpus) {
      if (n > 0 && avail.Contains(cpu)) take(CpuSet({cpu}));
    }
  }
  return result;
}

struct Outcome {
  int full_l3_requests = 0;
  int full_l3_admitted = 0;
};

template <typename Allocator>
Outcome Replay(uint32_t seed, const CpuTopology& t, const TopologyIndex& index, Allocator alloc) {
  std::mt19937 rng(seed);
  const int sizes[] = {1, 2, 2, 3, 4, 4, 6, 8, kL3Size, kL3Size};
  std::vector<CpuSet> live;
  CpuSet used;
  Outcome out;
  for (int step = 0; step < 1500; ++step) {
    const bool release =
        !live.empty() && (used.Count() > t.online.Count() * 95 / 100 || rng() % 3 == 0);
    const int size = sizes[rng() % std::size(sizes)];
    const size_t victim = rng();
    if (release) {
      const size_t i = victim % live.size();
      used -= live[i];
      live.erase(live.begin() + static_cast<long>(i));
      continue;
    }
    const CpuSet free = t.online - used;
    if (free.Count() < size) continue;
    const CpuSet got = alloc(free, size);
    EXPECT_EQ(got.Count(), size);
    EXPECT_TRUE(got.IsSubsetOf(free));
    if (size == kL3Size) {
      ++out.full_l3_requests;
      if (ComputeMetrics(index, got).l3_span != 1) continue;  // not admitted: nothing placed
      ++out.full_l3_admitted;
    }
    used |= got;
    live.push_back(got);
  }
  return out;
}

// Single steps on random free sets (each CPU free with a random probability) on several shapes
// (one or more NUMA nodes per socket, one or more L3 groups per NUMA node, SMT2 or none): our
// placement is never worse than the greedy baseline's on (numaSpan, socketSpan, l3Span,
// partialCores).
class NeverWorseThanGreedyTest : public ::testing::TestWithParam<testing::SyntheticShape> {};

TEST_P(NeverWorseThanGreedyTest, OnRandomFreeSets) {
  Result<CpuTopology> topo = BuildTopologyFromRecords(testing::SyntheticRecords(GetParam()));
  ASSERT_THAT(topo, IsOk());
  Result<TopologyIndex> index = TopologyIndex::Build(*topo);
  ASSERT_THAT(index, IsOk());
  std::mt19937 rng(5);
  int compared = 0, better = 0;
  for (int round = 0; round < 1000; ++round) {
    const int busy_percent = static_cast<int>(rng() % 100);
    CpuSet free;
    for (int cpu : topo->online) {
      if (static_cast<int>(rng() % 100) >= busy_percent) free.Set(cpu);
    }
    const int n = 1 + static_cast<int>(rng() % 40);
    if (free.Count() < n) continue;
    Result<CpuSet> ours = Allocate(*index, {free, n, {}, {}}, PlacementPolicy());
    ASSERT_THAT(ours, IsOk());
    const CpuSet greedy = GreedyTake(*topo, free, n);
    ASSERT_EQ(greedy.Count(), n);
    const auto a = ComputeMetrics(*index, *ours).QualityKey();
    const auto b = ComputeMetrics(*index, greedy).QualityKey();
    EXPECT_LE(a, b) << "n=" << n << " free=" << free.ToListString()
                    << " ours=" << ours->ToListString() << " greedy=" << greedy.ToListString();
    ++compared;
    better += a < b;
  }
  std::printf("[random steps] %d compared, ours strictly better in %d, never worse\n", compared,
              better);
}

INSTANTIATE_TEST_SUITE_P(Shapes, NeverWorseThanGreedyTest,
                         ::testing::Values(testing::SyntheticShape{2, 1, 96, 2, 12},
                                           testing::SyntheticShape{2, 2, 12, 2, 3},
                                           testing::SyntheticShape{1, 1, 32, 2, 4},
                                           testing::SyntheticShape{2, 4, 16, 1, 1},
                                           testing::SyntheticShape{4, 2, 8, 2, 2}),
                         [](const auto& info) {
                           const testing::SyntheticShape& s = info.param;
                           return std::to_string(s.sockets) + "s" +
                                  std::to_string(s.numa_per_socket) + "n" +
                                  std::to_string(s.l3_per_numa) + "l3_" +
                                  std::to_string(s.cores_per_numa / s.l3_per_numa) + "c" +
                                  std::to_string(s.threads_per_core) + "t";
                         });

TEST(AllocatorFragmentationTest, AdmitsAtLeastAsManyFullL3RequestsAsGreedy) {
  Result<CpuTopology> topo = BuildTopologyFromRecords(testing::SyntheticRecords({2, 1, 96, 2, 12}));
  ASSERT_THAT(topo, IsOk());
  ASSERT_EQ(topo->l3_caches.size(), 24u);
  Result<TopologyIndex> index = TopologyIndex::Build(*topo);
  ASSERT_THAT(index, IsOk());
  const PlacementPolicy options;
  Outcome ours_total, greedy_total;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const Outcome ours = Replay(seed, *topo, *index, [&](const CpuSet& free, int n) {
      Result<CpuSet> r = Allocate(*index, {free, n, {}, {}}, options);
      EXPECT_THAT(r, IsOk());
      return r.value_or(CpuSet());
    });
    const Outcome greedy = Replay(
        seed, *topo, *index, [&](const CpuSet& free, int n) { return GreedyTake(*topo, free, n); });
    std::printf("[fragmentation] seed %u: full-L3 admitted ours %d/%d, greedy %d/%d\n", seed,
                ours.full_l3_admitted, ours.full_l3_requests, greedy.full_l3_admitted,
                greedy.full_l3_requests);
    ours_total.full_l3_requests += ours.full_l3_requests;
    ours_total.full_l3_admitted += ours.full_l3_admitted;
    greedy_total.full_l3_requests += greedy.full_l3_requests;
    greedy_total.full_l3_admitted += greedy.full_l3_admitted;
  }
  const double ours_rate = 100.0 * ours_total.full_l3_admitted / ours_total.full_l3_requests;
  const double greedy_rate = 100.0 * greedy_total.full_l3_admitted / greedy_total.full_l3_requests;
  std::printf(
      "[fragmentation] full-L3 admission rate: ours %.1f%% (%d/%d), greedy %.1f%% (%d/%d)\n",
      ours_rate, ours_total.full_l3_admitted, ours_total.full_l3_requests, greedy_rate,
      greedy_total.full_l3_admitted, greedy_total.full_l3_requests);
  EXPECT_GT(ours_total.full_l3_requests, 100);
  EXPECT_GE(ours_rate, greedy_rate);
}

}  // namespace
}  // namespace dracpu::allocator
