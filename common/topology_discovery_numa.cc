// NUMA nodes for DiscoverTopology; the rules are in docs/topology.md "NUMA nodes".
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/sysfs_attribute.h"
#include "common/topology_discovery_internal.h"

namespace dracpu::topology_internal {
namespace {

std::string NodePath(int node) { return std::string(kNodeDir) + "/node" + std::to_string(node); }

// The node `cpu` links to among `candidates` (cpuN/nodeM symlinks), or -1.
int LinkedNode(const FileSystem& fs, int cpu, const std::vector<int>& candidates) {
  Result<std::vector<DirEntry>> entries = fs.ListDirectory(CpuPath(cpu));
  if (!entries.ok()) return -1;
  for (const int node : candidates) {  // ascending: the lowest linked node wins
    const std::string name = "node" + std::to_string(node);
    for (const DirEntry& e : *entries) {
      if (e.name == name) return node;
    }
  }
  return -1;
}

}  // namespace

Status DiscoverNumaNodes(const FileSystem& fs, CpuTopology& topo, PerCpu& numa_of) {
  Result<std::vector<int>> listed = ListIndexedDirectories(fs, kNodeDir, "node");
  if (!listed.ok() && listed.status().code() != StatusCode::kNotFound) return listed.status();
  if (!listed.ok() || listed->empty()) {
    // A kernel without CONFIG_NUMA: one node 0 holding every online CPU (what the kubelet and
    // hwloc assume). No distances: the kernel gives none.
    topo.numa_nodes.push_back(NumaNode{0, topo.online, {}});
    for (const int cpu : topo.online) numa_of[cpu] = 0;
    topo.warnings.emplace_back("no NUMA node directories: one node 0 with all online CPUs");
    return Status::Ok();
  }
  const std::vector<int>& node_ids = *listed;

  // Each node's CPUs as the kernel lists them (list file preferred over the mask), online only.
  std::vector<CpuSet> raw(node_ids.size());
  std::vector<std::vector<int>> claims(CpuSet::kMaxCpus);
  CpuSet claimed;
  CpuSet overlapping;
  for (size_t i = 0; i < node_ids.size(); ++i) {
    const std::string dir = NodePath(node_ids[i]);
    Result<CpuSet> cpus = ReadSysfsCpuListOrMask(fs, dir + "/cpulist", dir + "/cpumap");
    if (!cpus.ok()) {
      if (cpus.status().code() != StatusCode::kNotFound) return cpus.status();
      topo.warnings.push_back("node" + std::to_string(node_ids[i]) +
                              " has neither cpulist nor cpumap: taken as CPU-less");
      continue;
    }
    raw[i] = *cpus & topo.online;
    overlapping |= claimed & raw[i];
    claimed |= raw[i];
  }
  // Overlapping nodes (a firmware bug): each CPU goes to the node its cpuN/nodeM link names,
  // else to the lowest node listing it.
  for (size_t i = 0; i < node_ids.size(); ++i) {
    const CpuSet shared = raw[i] & overlapping;
    for (const int cpu : shared) claims[cpu].push_back(node_ids[i]);
  }
  std::map<int, CpuSet> assigned;
  for (size_t i = 0; i < node_ids.size(); ++i) {
    const CpuSet shared = raw[i] & overlapping;
    if (!shared.Empty()) {
      topo.warnings.push_back("node" + std::to_string(node_ids[i]) +
                              " overlaps CPUs of another node: " + shared.ToListString());
    }
    CpuSet own = raw[i] - overlapping;
    for (const int cpu : own) numa_of[cpu] = node_ids[i];
    assigned[node_ids[i]] = own;
  }
  for (const int cpu : overlapping) {
    const std::vector<int>& candidates = claims[cpu];
    int node = LinkedNode(fs, cpu, candidates);
    if (node < 0) node = candidates.front();
    numa_of[cpu] = node;
    assigned[node].Set(cpu);
  }
  const CpuSet homeless = topo.online - claimed;
  if (!homeless.Empty()) {
    topo.warnings.push_back("online CPUs in no NUMA node (NUMA node -1): " +
                            homeless.ToListString());
  }

  // The kernel prints nodeM/distance for every online node in id order, so the row maps to
  // node/online (else the node directories). Edited dumps (Haswell: node0 removed, "21 10" left)
  // may match the node directories or node/possible instead: the first list of the row's length
  // is used, with a warning when it is not the online one.
  std::vector<std::pair<std::string, std::vector<int>>> orders;
  for (const char* file : {"online", "possible"}) {
    Result<CpuSet> nodes = ReadSysfsCpuList(fs, std::string(kNodeDir) + "/" + file);
    if (nodes.ok()) {
      orders.emplace_back(std::string("node/") + file, nodes->ToVector());
    } else if (nodes.status().code() != StatusCode::kNotFound) {
      return nodes.status();
    }
    if (std::string_view(file) == "online") orders.emplace_back("the node directories", node_ids);
  }
  for (const int id : node_ids) {
    NumaNode node{id, assigned[id], {}};
    Result<std::vector<int>> row = ReadSysfsIntRow(fs, NodePath(id) + "/distance");
    if (row.ok()) {
      const std::vector<int>* order = nullptr;
      for (const auto& [name, ids] : orders) {
        if (ids.size() != row->size()) continue;
        order = &ids;
        if (&ids != &orders.front().second) {
          topo.warnings.push_back("node" + std::to_string(id) + "/distance has " +
                                  std::to_string(row->size()) + " entries: mapped to " + name +
                                  ", not " + orders.front().first);
        }
        break;
      }
      if (order != nullptr) {
        for (size_t k = 0; k < row->size(); ++k) node.distances[(*order)[k]] = (*row)[k];
      } else {
        topo.warnings.push_back("node" + std::to_string(id) + "/distance has " +
                                std::to_string(row->size()) + " entries for " +
                                std::to_string(orders.front().second.size()) +
                                " online nodes: distances ignored");
      }
    } else if (row.status().code() != StatusCode::kNotFound) {
      return row.status();
    }
    topo.numa_nodes.push_back(std::move(node));
  }
  return Status::Ok();
}

}  // namespace dracpu::topology_internal
