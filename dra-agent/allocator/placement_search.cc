#include "dra-agent/allocator/placement_search.h"

#include <algorithm>
#include <bit>
#include <string>
#include <tuple>
#include <utility>

namespace dracpu::allocator {
namespace {

// Bounds on the search. They only matter on machines with many NUMA nodes or L3 groups; the
// enumeration is best-fit first, so what is cut off are the looser fits.
constexpr int kMaxNumaCombos = 32;
constexpr int kMaxSocketCombos = 8;
constexpr int kMaxPairs = 6;
constexpr int kMaxL3Covers = 8;
// Candidate covers filled and scored per call, shared by the surviving pairs (at least 2 each).
constexpr int kMaxFills = 16;

struct Item {
  int group;
  int capacity;
};

// Combinations of the fewest items whose capacities sum to at least `need`: up to `limit`
// enumerated over the items in ascending (capacity, group) order, so the tightest fits come
// first, then up to `limit` more (not already listed) in descending order, so the combinations
// of the roomiest groups, which leave most choice to the levels below, are never all cut off.
// Returns that fewest count, or -1 when all items together are too small.
int EnumerateCovers(std::vector<Item> items, int need, int limit,
                    std::vector<std::vector<int>>* out) {
  out->clear();
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.capacity != b.capacity ? a.capacity < b.capacity : a.group < b.group;
  });
  const int n = static_cast<int>(items.size());
  std::vector<int> suffix(n + 1, 0);  // suffix[j] = sum of items[j..n)
  for (int j = n - 1; j >= 0; --j) suffix[j] = suffix[j + 1] + items[j].capacity;
  int k = 0;
  for (int sum = 0; k < n && sum < need; ++k) sum += items[n - 1 - k].capacity;
  if (suffix[std::max(0, n - k)] < need) return -1;
  if (k == 0) {
    out->push_back({});
    return 0;
  }
  // Depth-first over ascending indices; a branch is entered only when the largest remaining
  // items can still complete it, so every branch yields at least one cover.
  std::vector<int> chosen;
  auto emit = [&] {
    std::vector<int> groups;
    groups.reserve(chosen.size());
    for (int i : chosen) groups.push_back(items[i].group);
    out->push_back(std::move(groups));
  };
  auto ascending = [&](auto&& self, int start, int sum) -> void {
    const int left = k - static_cast<int>(chosen.size());
    if (left == 0) return emit();
    for (int i = start; i <= n - left && static_cast<int>(out->size()) < limit; ++i) {
      if (sum + items[i].capacity + suffix[n - left + 1] < need) continue;
      chosen.push_back(i);
      self(self, i + 1, sum + items[i].capacity);
      chosen.pop_back();
    }
  };
  ascending(ascending, 0, 0);
  const size_t first_pass = out->size();
  if (static_cast<int>(first_pass) < limit) return k;  // the first pass listed them all
  // Descending: indices from the top; the best completion of a branch after picking i is the
  // next `left - 1` items below i, so once that falls short every lower i does too.
  const int total_limit = 2 * limit;
  auto descending = [&](auto&& self, int start, int sum) -> void {
    const int left = k - static_cast<int>(chosen.size());
    if (left == 0) {
      std::vector<int> sorted = chosen;
      std::sort(sorted.begin(), sorted.end());
      for (size_t j = 0; j < first_pass; ++j) {
        std::vector<int> groups;
        groups.reserve(sorted.size());
        for (int i : sorted) groups.push_back(items[i].group);
        if ((*out)[j] == groups) return;
      }
      return emit();
    }
    for (int i = start; i >= left - 1 && static_cast<int>(out->size()) < total_limit; --i) {
      // items[i - left + 1 .. i - 1] are the largest below i.
      const int best_rest = suffix[i - left + 1] - suffix[i];
      if (sum + items[i].capacity + best_rest < need) break;
      chosen.push_back(i);
      self(self, i - 1, sum + items[i].capacity);
      chosen.pop_back();
    }
  };
  descending(descending, n - 1, 0);
  return k;
}

// Sums `value(cell)` per group(cell) over `cells` into items with capacity > 0.
template <typename GroupOf>
std::vector<Item> Aggregate(const std::vector<int>& cells, const std::vector<int>& cell_capacity,
                            int groups, GroupOf group_of) {
  std::vector<int> sum(groups, 0);
  for (int cell : cells) sum[group_of(cell)] += cell_capacity[cell];
  std::vector<Item> items;
  for (int g = 0; g < groups; ++g) {
    if (sum[g] > 0) items.push_back({g, sum[g]});
  }
  return items;
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

PlacementSearch::PlacementSearch(const TopologyIndex& index, const PlacementPolicy& options,
                                 const CpuSet& candidates)
    : index_(index), options_(options) {
  const auto& cores = index.cores();
  mask_.assign(cores.size(), 0);
  free_.assign(cores.size(), 0);
  for (int cpu : candidates) {
    const int c = index.CoreOf(cpu);
    if (c < 0) continue;
    mask_[c] |= uint32_t{1} << index.ThreadOf(cpu);
    ++free_[c];
  }
  capacity_.assign(cores.size(), 0);
  cell_capacity_.assign(index.cells().size(), 0);
  cell_whole_.assign(index.cells().size(), 0);
  numa_capacity_.assign(index.numa_count(), 0);
  numa_free_.assign(index.numa_count(), 0);
  socket_free_.assign(index.socket_count(), 0);
  l3_free_.assign(index.l3_count(), 0);
  numa_taken_.assign(index.numa_count(), 0);
  socket_taken_.assign(index.socket_count(), 0);
  l3_taken_.assign(index.l3_count(), 0);
  for (size_t c = 0; c < cores.size(); ++c) {
    capacity_[c] = options.full_pcpus_only ? (free_[c] == cores[c].width ? free_[c] : 0) : free_[c];
    cell_capacity_[cores[c].cell] += capacity_[c];
    if (free_[c] == cores[c].width) cell_whole_[cores[c].cell] += free_[c];
    numa_capacity_[cores[c].numa] += capacity_[c];
    numa_free_[cores[c].numa] += free_[c];
    socket_free_[cores[c].socket] += free_[c];
    l3_free_[cores[c].l3] += free_[c];
    total_capacity_ += capacity_[c];
  }
}

bool PlacementSearch::Preferred(CoreType type) const {
  switch (options_.core_type) {
    case CoreTypePreference::kPerformance:
      return type != CoreType::kEfficiency;
    case CoreTypePreference::kEfficiency:
      return type != CoreType::kPerformance;
    case CoreTypePreference::kAny:
      return true;
  }
  return true;
}

bool PlacementSearch::Admits(TypeFilter filter, CoreType type) const {
  switch (filter) {
    case TypeFilter::kAll:
      return true;
    case TypeFilter::kPreferredOnly:
      return Preferred(type);
    case TypeFilter::kOtherOnly:
      return !Preferred(type);
  }
  return true;
}

std::vector<int> PlacementSearch::OrderCells(std::vector<int> cells) const {
  const auto& all = index_.cells();
  auto key = [&](int cell) {
    const int l3 = all[cell].l3;
    const bool l3_free = l3_free_[l3] == index_.l3_total(l3);
    return std::make_tuple(l3_free, l3_free_[l3], l3, index_.cores()[all[cell].cores[0]].id);
  };
  std::sort(cells.begin(), cells.end(), [&](int a, int b) { return key(a) < key(b); });
  return cells;
}

bool PlacementSearch::Fill(const std::vector<int>& cells, int count, TypeFilter filter,
                           Selection* out) const {
  out->clear();
  const auto& cores = index_.cores();
  const auto& all = index_.cells();
  int need = count;
  // Whole free cores, preferred core type first (matters only for TypeFilter::kAll).
  std::vector<int> rest;  // usable cores not taken whole, in preference order
  for (int pass = 0; pass < 2; ++pass) {
    for (int cell : cells) {
      for (int c : all[cell].cores) {
        if (capacity_[c] == 0 || !Admits(filter, cores[c].type)) continue;
        if (Preferred(cores[c].type) != (pass == 0)) continue;
        if (free_[c] == cores[c].width && cores[c].width <= need) {
          out->push_back({c, mask_[c]});
          need -= cores[c].width;
        } else {
          rest.push_back(c);
        }
      }
    }
  }
  if (need == 0) return true;
  if (options_.full_pcpus_only) return false;
  // The remainder: while no single core can hold it, take the cores with the most free threads
  // (fewest cores touched); then the single core that fits best, a partly used one before a
  // free one (it strands no new sibling).
  std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) { return free_[a] > free_[b]; });
  size_t next = 0;
  while (need > 0) {
    if (next == rest.size()) return false;
    if (free_[rest[next]] < need) {
      out->push_back({rest[next], mask_[rest[next]]});
      need -= free_[rest[next]];
      ++next;
      continue;
    }
    int best = -1;
    for (size_t i = next; i < rest.size(); ++i) {
      const int c = rest[i];
      if (free_[c] < need) break;
      const bool partial = free_[c] < cores[c].width;
      if (best < 0) {
        best = c;
        continue;
      }
      const bool best_partial = free_[best] < cores[best].width;
      if (partial != best_partial ? partial : free_[c] < free_[best]) best = c;
    }
    // Lowest `need` free threads of the chosen core.
    uint32_t take = 0;
    for (uint32_t m = mask_[best]; need > 0; m &= m - 1, --need) take |= m & -m;
    out->push_back({best, take});
  }
  return true;
}

bool PlacementSearch::FillSpread(const std::vector<int>& cells, int count, TypeFilter filter,
                                 SpreadOrder spread, Selection* out) const {
  out->clear();
  const auto& cores = index_.cores();
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass) {
    for (int cell : cells) {
      for (int c : index_.cells()[cell].cores) {
        if (capacity_[c] == 0 || !Admits(filter, cores[c].type)) continue;
        if (Preferred(cores[c].type) == (pass == 0)) order.push_back(c);
      }
    }
  }
  std::vector<uint32_t> left(order.size());
  std::vector<uint32_t> taken(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) left[i] = mask_[order[i]];
  int need = count;
  // As kubelet's spread strategy: whole free NUMA nodes, then whole free sockets, while the
  // request still covers one; spreading inside a unit the request fills anyway gains nothing.
  for (int level = 0; level < 2; ++level) {
    const int groups = level == 0 ? index_.numa_count() : index_.socket_count();
    for (int g = 0; g < groups; ++g) {
      const int total = level == 0 ? index_.numa_total(g) : index_.socket_total(g);
      const int free = level == 0 ? numa_free_[g] : socket_free_[g];
      if (free != total || total > need) continue;
      int in_order = 0;
      for (size_t i = 0; i < order.size(); ++i) {
        const auto& core = cores[order[i]];
        if ((level == 0 ? core.numa : core.socket) == g) in_order += std::popcount(left[i]);
      }
      if (in_order != total) continue;  // part of the unit is outside the cover
      for (size_t i = 0; i < order.size(); ++i) {
        const auto& core = cores[order[i]];
        if ((level == 0 ? core.numa : core.socket) != g) continue;
        taken[i] |= left[i];
        left[i] = 0;
      }
      need -= total;
    }
  }
  if (spread == SpreadOrder::kCpuId) {
    struct Thread {
      int cpu;
      size_t slot;
      uint32_t bit;
    };
    std::vector<Thread> free_threads;
    for (size_t i = 0; i < order.size(); ++i) {
      const int first = cores[order[i]].first;
      for (uint32_t m = left[i]; m != 0; m &= m - 1) {
        const uint32_t bit = m & -m;
        free_threads.push_back({index_.threads()[first + std::countr_zero(bit)], i, bit});
      }
    }
    if (static_cast<int>(free_threads.size()) < need) return false;
    std::partial_sort(free_threads.begin(), free_threads.begin() + need, free_threads.end(),
                      [](const Thread& a, const Thread& b) { return a.cpu < b.cpu; });
    for (int k = 0; k < need; ++k) taken[free_threads[k].slot] |= free_threads[k].bit;
    need = 0;
  }
  // Round by round: one more thread of every core per round, so siblings come last.
  bool progress = true;
  while (need > 0 && progress) {
    progress = false;
    for (size_t i = 0; i < order.size() && need > 0; ++i) {
      if (left[i] == 0) continue;
      const uint32_t bit = left[i] & -left[i];
      left[i] &= ~bit;
      taken[i] |= bit;
      --need;
      progress = true;
    }
  }
  if (need > 0) return false;
  for (size_t i = 0; i < order.size(); ++i) {
    if (taken[i] != 0) out->push_back({order[i], taken[i]});
  }
  return true;
}

PlacementSearch::Score PlacementSearch::Evaluate(const Selection& selection) const {
  const auto& cores = index_.cores();
  std::vector<int>& numa_taken = numa_taken_;
  std::vector<int>& socket_taken = socket_taken_;
  std::vector<int>& l3_taken = l3_taken_;
  std::fill(numa_taken.begin(), numa_taken.end(), 0);
  std::fill(socket_taken.begin(), socket_taken.end(), 0);
  std::fill(l3_taken.begin(), l3_taken.end(), 0);
  int partial = 0, broken_cores = 0, non_preferred = 0;
  bool types[3] = {false, false, false};
  for (const Take& t : selection) {
    const auto& core = cores[t.core];
    const int n = std::popcount(t.mask);
    numa_taken[core.numa] += n;
    socket_taken[core.socket] += n;
    l3_taken[core.l3] += n;
    partial += n < core.width;
    broken_cores += free_[t.core] == core.width && n < core.width;
    if (!Preferred(core.type)) non_preferred += n;
    types[static_cast<int>(core.type)] = true;
  }
  int numa_span = 0, socket_span = 0, l3_span = 0;
  int broken_numa = 0, broken_socket = 0, broken_l3 = 0;
  int largest_l3 = 0, largest_numa = 0;
  for (int n = 0; n < index_.numa_count(); ++n) {
    numa_span += numa_taken[n] > 0;
    broken_numa += numa_taken[n] > 0 && numa_free_[n] == index_.numa_total(n);
    largest_numa = std::max(largest_numa, numa_free_[n] - numa_taken[n]);
  }
  for (int s = 0; s < index_.socket_count(); ++s) {
    socket_span += socket_taken[s] > 0;
    broken_socket += socket_taken[s] > 0 && socket_free_[s] == index_.socket_total(s);
  }
  for (int l = 0; l < index_.l3_count(); ++l) {
    l3_span += l3_taken[l] > 0;
    broken_l3 += l3_taken[l] > 0 && l3_free_[l] == index_.l3_total(l);
    largest_l3 = std::max(largest_l3, l3_free_[l] - l3_taken[l]);
  }
  const int type_mix = types[0] + types[1] + types[2];
  if (options_.prefer_align_cpus_by_uncorecache) {
    return {numa_span,    socket_span, l3_span,     partial,       type_mix,    non_preferred,
            broken_cores, broken_l3,   broken_numa, broken_socket, -largest_l3, -largest_numa};
  }
  // Without uncore alignment the L3 span is only a tie-break among equally damaging fills.
  return {numa_span, socket_span, partial,       type_mix, non_preferred, broken_cores,
          broken_l3, broken_numa, broken_socket, l3_span,  -largest_l3,   -largest_numa};
}

std::vector<int> PlacementSearch::RichestCover(const std::vector<int>& cells, int size,
                                               int count) const {
  std::vector<int> whole(index_.l3_count(), 0), free(index_.l3_count(), 0);
  std::vector<int> groups;
  for (int c : cells) {
    const int l3 = index_.cells()[c].l3;
    if (free[l3] == 0 && cell_capacity_[c] > 0) groups.push_back(l3);
    whole[l3] += cell_whole_[c];
    free[l3] += cell_capacity_[c];
  }
  if (static_cast<int>(groups.size()) < size) return {};
  std::sort(groups.begin(), groups.end(), [&](int a, int b) {
    return std::make_tuple(-whole[a], -free[a], a) < std::make_tuple(-whole[b], -free[b], b);
  });
  groups.resize(size);
  int sum = 0;
  for (int g : groups) sum += free[g];
  if (sum < count) return {};
  return groups;
}

Result<CpuSet> PlacementSearch::Place(int count, const std::vector<int>& cells_in) const {
  std::vector<int> region = cells_in;
  if (region.empty()) {
    for (size_t c = 0; c < index_.cells().size(); ++c) region.push_back(static_cast<int>(c));
  }
  const auto& cells = index_.cells();
  int capacity = 0;
  for (int c : region) capacity += cell_capacity_[c];
  if (capacity < count) {
    return ResourceExhaustedError(
        std::string(options_.full_pcpus_only ? "not enough free whole cores" : "not enough cpus") +
        " available to satisfy request: requested=" + std::to_string(count) +
        ", available=" + std::to_string(capacity));
  }
  if (count == 0) return CpuSet();

  // What whole cores should supply: all but the remainder that cannot fill a core.
  const int width = index_.uniform_width();
  const int whole_need = width > 1 ? count - count % width : count;
  auto l3_of = [&](int c) { return cells[c].l3; };

  // 1. Level search on capacities: (NUMA set, socket set) pairs with the smallest spans; among
  // those, pairs whose whole free cores hold `whole_need` first (no avoidable partial core).
  struct Pair {
    std::vector<int> cells;  // region restricted to the pair
    int l3_span;
  };
  std::vector<Pair> pairs;
  std::array<int, 4> best_key = {1 << 30, 1 << 30, 1 << 30, 1 << 30};
  std::vector<std::vector<int>> numa_sets, socket_sets, l3_sets, whole_sets;
  const int numa_k = EnumerateCovers(
      Aggregate(region, cell_capacity_, index_.numa_count(), [&](int c) { return cells[c].numa; }),
      count, kMaxNumaCombos, &numa_sets);
  if (numa_k < 0) return InternalError("capacity accounting error at the NUMA level");
  for (const std::vector<int>& numas : numa_sets) {
    std::vector<int> in_numas;
    for (int c : region) {
      if (Contains(numas, cells[c].numa)) in_numas.push_back(c);
    }
    const int socket_k = EnumerateCovers(Aggregate(in_numas, cell_capacity_, index_.socket_count(),
                                                   [&](int c) { return cells[c].socket; }),
                                         count, kMaxSocketCombos, &socket_sets);
    if (socket_k < 0) continue;
    for (const std::vector<int>& sockets : socket_sets) {
      Pair pair;
      int whole = 0;
      for (int c : in_numas) {
        if (Contains(sockets, cells[c].socket)) {
          pair.cells.push_back(c);
          whole += cell_whole_[c];
        }
      }
      std::vector<std::vector<int>> unused;
      pair.l3_span =
          options_.prefer_align_cpus_by_uncorecache
              ? EnumerateCovers(Aggregate(pair.cells, cell_capacity_, index_.l3_count(), l3_of),
                                count, 0, &unused)
              : 0;
      if (pair.l3_span < 0) continue;
      // Whole-core CPUs the best `l3_span` groups can give (all of the pair without alignment).
      if (options_.prefer_align_cpus_by_uncorecache) {
        std::vector<Item> by_whole = Aggregate(pair.cells, cell_whole_, index_.l3_count(), l3_of);
        std::sort(by_whole.begin(), by_whole.end(),
                  [](const Item& a, const Item& b) { return a.capacity > b.capacity; });
        whole = 0;
        for (int i = 0; i < pair.l3_span && i < static_cast<int>(by_whole.size()); ++i) {
          whole += by_whole[i].capacity;
        }
      }
      const std::array<int, 4> key = {numa_k, socket_k, pair.l3_span,
                                      std::max(0, whole_need - whole)};
      if (key < best_key) {
        best_key = key;
        pairs.clear();
      }
      if (key == best_key && static_cast<int>(pairs.size()) < kMaxPairs) {
        pairs.push_back(std::move(pair));
      }
    }
  }

  // 2. Candidate L3 covers and core-level fills, 3. scored.
  std::vector<TypeFilter> filters = {TypeFilter::kAll};
  if (index_.hybrid())
    filters = {TypeFilter::kPreferredOnly, TypeFilter::kOtherOnly, TypeFilter::kAll};
  bool found = false;
  Score best_score{};
  Selection best, selection;
  const int covers_per_pair = std::min(
      kMaxL3Covers, std::max(2, kMaxFills / static_cast<int>(std::max<size_t>(1, pairs.size()))));
  for (const Pair& pair : pairs) {
    if (options_.prefer_align_cpus_by_uncorecache) {
      EnumerateCovers(Aggregate(pair.cells, cell_capacity_, index_.l3_count(), l3_of), count,
                      covers_per_pair, &l3_sets);
      // Covers of the same size that whole free cores alone (nearly) fill.
      whole_sets.clear();
      if (!options_.full_pcpus_only && whole_need > 0) {
        std::vector<std::vector<int>> found;
        if (EnumerateCovers(Aggregate(pair.cells, cell_whole_, index_.l3_count(), l3_of),
                            whole_need, covers_per_pair, &found) == pair.l3_span) {
          whole_sets = std::move(found);
        }
      }
      // And the groups richest in whole free cores, when they hold the request: the fewest
      // partial cores when no cover avoids them all.
      std::vector<int> richest = RichestCover(pair.cells, pair.l3_span, count);
      if (!richest.empty()) whole_sets.push_back(std::move(richest));
      for (std::vector<int>& w : whole_sets) {
        std::sort(w.begin(), w.end());
        bool seen = false;
        for (std::vector<int> l : l3_sets) {
          std::sort(l.begin(), l.end());
          seen |= l == w;
        }
        if (!seen) l3_sets.push_back(std::move(w));
      }
    } else {
      l3_sets = {{}};
    }
    for (const std::vector<int>& l3s : l3_sets) {
      std::vector<int> cover;
      for (int c : pair.cells) {
        if (!options_.prefer_align_cpus_by_uncorecache || Contains(l3s, cells[c].l3)) {
          cover.push_back(c);
        }
      }
      cover = OrderCells(std::move(cover));
      for (TypeFilter filter : filters) {
        auto consider = [&](bool ok) {
          if (!ok) return;
          const Score score = Evaluate(selection);
          if (!found || score < best_score) {
            found = true;
            best_score = score;
            best = selection;
          }
        };
        if (!options_.distribute_cpus_across_cores) {
          consider(Fill(cover, count, filter, &selection));
          continue;
        }
        // Both spread orders are scored; on a tie the round-robin one (first) stays.
        consider(FillSpread(cover, count, filter, SpreadOrder::kRoundRobin, &selection));
        consider(FillSpread(cover, count, filter, SpreadOrder::kCpuId, &selection));
      }
    }
  }
  if (!found) {
    return ResourceExhaustedError("cannot make " + std::to_string(count) +
                                  " CPUs out of whole free cores (full-pcpus-only)");
  }
  CpuSet result;
  const auto& threads = index_.threads();
  for (const Take& t : best) {
    const int first = index_.cores()[t.core].first;
    for (uint32_t m = t.mask; m != 0; m &= m - 1) result.Set(threads[first + std::countr_zero(m)]);
  }
  return result;
}

}  // namespace dracpu::allocator
