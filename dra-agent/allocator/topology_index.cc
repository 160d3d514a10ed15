#include "dra-agent/allocator/topology_index.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace dracpu::allocator {
int TopologyIndex::NumaIndex(int id) const {
  auto it = std::find(numa_ids_.begin(), numa_ids_.end(), id);
  return it == numa_ids_.end() ? -1 : static_cast<int>(it - numa_ids_.begin());
}

Result<TopologyIndex> TopologyIndex::Build(const CpuTopology& topology) {
  if (Status s = topology.Validate(); !s.ok()) {
    return InvalidArgumentError("topology: " + s.message());
  }
  if (topology.cores.empty()) return InvalidArgumentError("topology has no cores");
  TopologyIndex ix;
  ix.online_ = topology.online;
  ix.cpu_core_.assign(topology.online.Last() + 1, -1);
  ix.cpu_thread_.assign(topology.online.Last() + 1, -1);

  // Dense ids in ascending kernel id order (maps are ordered), so iteration order is stable.
  std::map<int, int> numa_dense, socket_dense;
  std::map<std::pair<int, int>, int> l3_dense;
  for (const CpuInfo& info : topology.cpus) {
    numa_dense.emplace(info.numa_node, 0);
    socket_dense.emplace(info.package, 0);
    l3_dense.emplace(std::make_pair(info.package, info.l3), 0);
  }
  int next = 0;
  for (auto& [id, dense] : numa_dense) dense = next++, ix.numa_ids_.push_back(id);
  next = 0;
  for (auto& [id, dense] : socket_dense) dense = next++, ix.socket_ids_.push_back(id);
  next = 0;
  for (auto& [key, dense] : l3_dense) dense = next++;
  ix.numa_total_.assign(ix.numa_ids_.size(), 0);
  ix.socket_total_.assign(ix.socket_ids_.size(), 0);
  ix.l3_total_.assign(l3_dense.size(), 0);
  ix.numa_cpus_.assign(ix.numa_ids_.size(), CpuSet());
  ix.socket_cpus_.assign(ix.socket_ids_.size(), CpuSet());

  std::map<std::tuple<int, int, int>, int> cell_dense;
  int min_width = 1 << 30, max_width = 0;
  bool has_types[3] = {false, false, false};
  for (const Core& core : topology.cores) {
    const CpuInfo* first = topology.FindCpu(core.id);
    if (first == nullptr)
      return InvalidArgumentError("core " + std::to_string(core.id) + " unknown");
    CoreEntry e;
    e.id = core.id;
    e.first = static_cast<int>(ix.threads_.size());
    e.width = core.cpus.Count();
    if (e.width > kMaxThreadsPerCore) {
      return InvalidArgumentError("core " + std::to_string(core.id) + " has " +
                                  std::to_string(e.width) + " threads; at most " +
                                  std::to_string(kMaxThreadsPerCore) + " are supported");
    }
    e.type = core.type;
    e.numa = numa_dense[first->numa_node];
    e.socket = socket_dense[first->package];
    e.l3 = l3_dense[{first->package, first->l3}];
    for (int cpu : core.cpus) {
      const CpuInfo* info = topology.FindCpu(cpu);
      if (info->numa_node != first->numa_node || info->package != first->package ||
          info->l3 != first->l3) {
        return InvalidArgumentError("core " + std::to_string(core.id) +
                                    " has threads in different NUMA nodes, sockets or L3 groups");
      }
      ix.cpu_thread_[cpu] = static_cast<int>(ix.threads_.size()) - e.first;
      ix.threads_.push_back(cpu);
      ix.cpu_core_[cpu] = static_cast<int>(ix.cores_.size());
      ix.numa_cpus_[e.numa].Set(cpu);
      ix.socket_cpus_[e.socket].Set(cpu);
    }
    ix.numa_total_[e.numa] += e.width;
    ix.socket_total_[e.socket] += e.width;
    ix.l3_total_[e.l3] += e.width;
    auto [it, inserted] = cell_dense.emplace(std::make_tuple(e.numa, e.socket, e.l3),
                                             static_cast<int>(ix.cells_.size()));
    if (inserted) ix.cells_.push_back(Cell{e.numa, e.socket, e.l3, {}});
    e.cell = it->second;
    ix.cells_[e.cell].cores.push_back(static_cast<int>(ix.cores_.size()));
    min_width = std::min(min_width, e.width);
    max_width = std::max(max_width, e.width);
    has_types[static_cast<int>(e.type)] = true;
    ix.cores_.push_back(e);
  }
  ix.uniform_width_ = min_width == max_width ? max_width : 0;
  ix.hybrid_ = (has_types[0] + has_types[1] + has_types[2]) > 1;
  return ix;
}

}  // namespace dracpu::allocator
