#include "dra-agent/allocator/numa_distribution.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <tuple>
#include <vector>

namespace dracpu::allocator {
namespace {

// Bounds on the enumeration: NUMA combinations examined per k (C(16, 8) = 12870 would otherwise
// be walked whole), and remainder assignments examined per call, so a 16-node machine with no
// even split cannot spend more than a few milliseconds here.
constexpr int kMaxCombos = 4096;
constexpr int kMaxAssignments = 200000;

// Calls visit(combo) for each k-combination of [0, n) in lexicographic order, until it returns
// false or `budget` combinations were visited.
void ForEachCombination(int n, int k, int budget,
                        const std::function<bool(const std::vector<int>&)>& visit) {
  std::vector<int> combo(k);
  for (int i = 0; i < k; ++i) combo[i] = i;
  if (k > n) return;
  while (budget-- > 0) {
    if (!visit(combo)) return;
    int i = k - 1;
    while (i >= 0 && combo[i] == n - k + i) --i;
    if (i < 0) return;
    ++combo[i];
    for (int j = i + 1; j < k; ++j) combo[j] = combo[j - 1] + 1;
  }
}

}  // namespace

Result<CpuSet> PlaceDistributed(const TopologyIndex& index, const PlacementPolicy& options,
                                const PlacementSearch& search, int count) {
  int group = options.numa_distribution_group;
  if (group <= 0) group = options.full_pcpus_only ? std::max(1, index.uniform_width()) : 1;
  if (count % group != 0) return NotFoundError("request is not a multiple of the group size");
  const int nodes = index.numa_count();
  std::vector<int> capacity(nodes);
  for (int n = 0; n < nodes; ++n) capacity[n] = search.numa_capacity(n) / group * group;
  std::vector<int> sorted = capacity;
  std::sort(sorted.rbegin(), sorted.rend());
  int min_k = 0;
  for (int sum = 0; min_k < nodes && sum < count; ++min_k) sum += sorted[min_k];
  std::vector<std::vector<char>> sockets_of(nodes, std::vector<char>(index.socket_count(), 0));
  for (const auto& cell : index.cells()) sockets_of[cell.numa][cell.socket] = 1;

  int budget = kMaxAssignments;
  for (int k = std::max(1, min_k); k <= nodes && budget > 0; ++k) {
    const int share = count / k / group * group;
    const int extras = (count - share * k) / group;
    bool found = false;
    std::tuple<int, int64_t> best_key;
    std::vector<int> best_combo, best_extra;
    ForEachCombination(nodes, k, kMaxCombos, [&](const std::vector<int>& combo) {
      if (budget <= 0) return false;
      std::vector<int> eligible;  // nodes that can take one more group
      for (int n : combo) {
        if (capacity[n] < share) return true;
        if (capacity[n] >= share + group) eligible.push_back(n);
      }
      if (static_cast<int>(eligible.size()) < extras) return true;
      int sockets = 0;
      for (int s = 0; s < index.socket_count(); ++s) {
        bool used = false;
        for (int n : combo) used |= sockets_of[n][s] != 0;
        sockets += used;
      }
      // Balance: variance (times nodes^2) of the free CPUs every node keeps.
      ForEachCombination(
          static_cast<int>(eligible.size()), extras, kMaxCombos, [&](const std::vector<int>& pick) {
            if (--budget < 0) return false;
            std::vector<int> take(nodes, 0);
            for (int n : combo) take[n] = share;
            for (int i : pick) take[eligible[i]] += group;
            int64_t sum = 0, squares = 0;
            for (int n = 0; n < nodes; ++n) {
              const int64_t left = search.numa_free(n) - take[n];
              sum += left;
              squares += left * left;
            }
            const std::tuple<int, int64_t> key = {sockets, squares * nodes - sum * sum};
            if (!found || key < best_key) {
              found = true;
              best_key = key;
              best_combo = combo;
              best_extra.clear();
              for (int i : pick) best_extra.push_back(eligible[i]);
            }
            return true;
          });
      return true;
    });
    if (!found) continue;
    CpuSet result;
    for (int n : best_combo) {
      const bool extra = std::find(best_extra.begin(), best_extra.end(), n) != best_extra.end();
      std::vector<int> cells;
      for (size_t c = 0; c < index.cells().size(); ++c) {
        if (index.cells()[c].numa == n) cells.push_back(static_cast<int>(c));
      }
      Result<CpuSet> part = search.Place(share + (extra ? group : 0), cells);
      if (!part.ok())
        return NotFoundError("share of NUMA node does not fit: " + part.status().message());
      result |= *part;
    }
    return result;
  }
  return NotFoundError("no even split over NUMA nodes fits");
}

}  // namespace dracpu::allocator
