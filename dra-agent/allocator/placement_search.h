// PlacementSearch: chooses `count` CPUs among a candidate set by the quality order of issue 3,
// for one call. Internal to the allocator (allocator.h is the API).
//
// Search (docs/allocator.md has the full story):
//  1. Level search on capacities. NUMA nodes: the fewest nodes whose free capacity holds the
//     request, every such combination (best fit first, bounded). Inside each, the fewest sockets;
//     inside those, the fewest L3 groups. Capacities count whole free cores only under
//     full-pcpus-only. Only (NUMA set, socket set) pairs reaching the lexicographic minimum of
//     (NUMA span, socket span, L3 span) survive.
//     Pairs whose wholly free cores can hold the request (but for an odd remainder) rank first.
//  2. For each surviving pair, candidate L3 covers of that minimal size: the tightest fits by free
//     capacity and the tightest fits by wholly-free-core capacity (so covers that avoid partial
//     cores are always among the candidates), bounded; and for each cover a core-level fill: whole
//     free cores first (fullest L3 group first), then the remainder on the single core that fits it
//     best (a partly used core before breaking a free one), else the largest partial cores. On
//     hybrid parts the fill is tried on the preferred core type alone, on the other alone, and on
//     both.
//  3. Every fill is scored lexicographically (spans, partial cores, core-type mix, CPUs of the
//     non-preferred type, then damage: free cores, free L3 groups, free NUMA nodes and sockets
//     broken, then the largest free L3 and NUMA capacity left) and the best one wins; ties keep
//     the first found, so the answer is deterministic.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/cpu_set.h"
#include "common/status.h"
#include "dra-agent/allocator/allocator_options.h"
#include "dra-agent/allocator/topology_index.h"

namespace dracpu::allocator {

// One object per allocation call; not for concurrent use (it keeps scratch buffers).
class PlacementSearch {
 public:
  // `candidates` must be CPUs of the topology.
  PlacementSearch(const TopologyIndex& index, const PlacementPolicy& options,
                  const CpuSet& candidates);

  // Free threads of a core among the candidates / what it can contribute (whole cores only
  // under full-pcpus-only).
  int free(int core) const { return free_[core]; }
  int capacity(int core) const { return capacity_[core]; }
  // Capacity of a NUMA node (dense index) among the candidates.
  int numa_capacity(int numa) const { return numa_capacity_[numa]; }
  int numa_free(int numa) const { return numa_free_[numa]; }
  int total_capacity() const { return total_capacity_; }

  // The best placement of `count` CPUs inside `cells` (dense cell indices; empty = all cells).
  // RESOURCE_EXHAUSTED when the cells cannot hold it.
  Result<CpuSet> Place(int count, const std::vector<int>& cells = {}) const;

 private:
  struct Take {
    int core;
    uint32_t mask;  // bit i: threads()[first + i]
  };
  using Selection = std::vector<Take>;
  using Score = std::array<int, 12>;
  enum class TypeFilter { kAll, kPreferredOnly, kOtherOnly };

  bool Preferred(CoreType type) const;
  bool Admits(TypeFilter filter, CoreType type) const;
  // Core-level fill of `cells` (already in preference order); false when it cannot reach count.
  bool Fill(const std::vector<int>& cells, int count, TypeFilter filter, Selection* out) const;
  // distribute-cpus-across-cores: whole free NUMA nodes and sockets the request covers, then
  // either one thread per core per round (kRoundRobin) or the free CPUs in ascending id order
  // (kCpuId, kubelet's spread order: it spreads on Linux x86 numbering and keeps kubelet's
  // partial-core count on machines numbered core by core).
  enum class SpreadOrder { kRoundRobin, kCpuId };
  bool FillSpread(const std::vector<int>& cells, int count, TypeFilter filter, SpreadOrder order,
                  Selection* out) const;
  Score Evaluate(const Selection& selection) const;
  // The `size` L3 groups of `cells` with the most whole free cores, if their free CPUs hold
  // `count`; else empty.
  std::vector<int> RichestCover(const std::vector<int>& cells, int size, int count) const;
  // Orders cells for filling: partly used L3 groups before free ones, fuller ones first.
  std::vector<int> OrderCells(std::vector<int> cells) const;

  const TopologyIndex& index_;
  const PlacementPolicy& options_;
  std::vector<uint32_t> mask_;  // free threads per core
  std::vector<int> free_;       // popcount(mask_)
  std::vector<int> capacity_;   // usable CPUs per core
  std::vector<int> cell_capacity_;
  std::vector<int> cell_whole_;  // CPUs of wholly free cores per cell
  std::vector<int> numa_capacity_, numa_free_, socket_free_, l3_free_;
  int total_capacity_ = 0;
  // Scratch space of Evaluate, kept to avoid allocating per candidate fill.
  mutable std::vector<int> numa_taken_, socket_taken_, l3_taken_;
};

}  // namespace dracpu::allocator
