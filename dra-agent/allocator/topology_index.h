// TopologyIndex: a CpuTopology rearranged once for fast allocation.
//
// Every core gets a dense index and knows its threads, width, core type, NUMA node, socket and
// L3 group (also dense indices). Cores sharing (NUMA node, socket, L3 group) form a "cell"; cells
// are the units the allocator's level search (NUMA -> socket -> L3) works on, so membership is
// always real (an L3 spanning two NUMA nodes is two cells of one L3 group), never averaged.
// L3 groups are keyed by (socket, L3 id) so an id reused across sockets never joins them.
// A CPU with no NUMA node or no L3 (-1) gets a group of its own kind per socket.
//
// Build once per topology; immutable afterwards, safe to share between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "common/cpu_set.h"
#include "common/cpu_topology.h"
#include "common/status.h"

namespace dracpu::allocator {

class TopologyIndex {
 public:
  // Largest SMT width the per-core thread masks can hold.
  static constexpr int kMaxThreadsPerCore = 32;

  struct CoreEntry {
    int id = -1;    // Core::id (lowest CPU)
    int first = 0;  // offset of its threads in threads()
    int width = 0;  // number of threads
    CoreType type = CoreType::kStandard;
    int numa = 0;  // dense indices
    int socket = 0;
    int l3 = 0;
    int cell = 0;
  };
  struct Cell {
    int numa = 0;
    int socket = 0;
    int l3 = 0;
    std::vector<int> cores;  // dense core indices, ascending core id
  };

  // INVALID_ARGUMENT when the topology breaks its invariants or a core is wider than
  // kMaxThreadsPerCore.
  static Result<TopologyIndex> Build(const CpuTopology& topology);

  const std::vector<CoreEntry>& cores() const { return cores_; }
  const std::vector<Cell>& cells() const { return cells_; }
  // Thread CPU ids of core c are threads()[first .. first+width), ascending.
  const std::vector<int>& threads() const { return threads_; }
  // Dense core index of a CPU, -1 when the CPU is not in the topology.
  int CoreOf(int cpu) const {
    return cpu >= 0 && cpu < static_cast<int>(cpu_core_.size()) ? cpu_core_[cpu] : -1;
  }
  // Position of a CPU among its core's threads (valid when CoreOf(cpu) >= 0).
  int ThreadOf(int cpu) const { return cpu_thread_[cpu]; }

  int numa_count() const { return static_cast<int>(numa_ids_.size()); }
  int socket_count() const { return static_cast<int>(socket_ids_.size()); }
  int l3_count() const { return static_cast<int>(l3_total_.size()); }
  int numa_id(int dense) const { return numa_ids_[dense]; }
  int socket_id(int dense) const { return socket_ids_[dense]; }
  // Dense index of a kernel NUMA node id, -1 when absent.
  int NumaIndex(int id) const;
  // CPUs of each group (all online CPUs, free or not).
  int numa_total(int n) const { return numa_total_[n]; }
  int socket_total(int s) const { return socket_total_[s]; }
  int l3_total(int l) const { return l3_total_[l]; }
  const CpuSet& numa_cpus(int n) const { return numa_cpus_[n]; }
  const CpuSet& socket_cpus(int s) const { return socket_cpus_[s]; }
  const CpuSet& online() const { return online_; }

  // Width shared by every core, 0 when widths differ (hybrid parts).
  int uniform_width() const { return uniform_width_; }
  bool hybrid() const { return hybrid_; }

 private:
  std::vector<CoreEntry> cores_;
  std::vector<Cell> cells_;
  std::vector<int> threads_;
  std::vector<int> cpu_core_;
  std::vector<int> cpu_thread_;
  std::vector<int> numa_ids_, socket_ids_;
  std::vector<int> numa_total_, socket_total_, l3_total_;
  std::vector<CpuSet> numa_cpus_, socket_cpus_;
  CpuSet online_;
  int uniform_width_ = 0;
  bool hybrid_ = false;
};

}  // namespace dracpu::allocator
