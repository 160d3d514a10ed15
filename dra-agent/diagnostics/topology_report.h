// Renders a CpuTopology as the gatherinfo report: JSON, YAML (same tree, same keys) or a short
// human summary. The key contract (issue 2 item 8) is documented in docs/topology.md:
//   layoutVersion, toolVersion{name, version}, sysfsRoot, warnings,
//   topology{online, offline, present, possible, isolated, smtEnabled, smtControl,
//            threadsPerCore, threadsPerCoreValues, packages, dies, clusters, numaNodes,
//            l3Caches, l2Caches, cores, cpus, pcieRoots},
// and the reference driver's keys, so its readers (its e2e test, runbooks) work unchanged:
//   cpuDetails{topology{numCPUs, numCores, numUncoreCache, numSockets, numNUMANodes, smtEnabled},
//              cpus[{cpuID, coreID, socketID, clusterID, numaNodeID, numaNodeCPUSet, sibling,
//                    coreType, uncoreCacheID}]},
//   driverConfig{...} (the running dra-agent's effective configuration, when one was found;
//                      ours adds driverPid), and ours: kubeletCpuManager{stateFile, found,
//                      policyName, conflict}.
//   nodeMap (when given: the text of `dracpu-shm map`, plain, 80 columns)
// CPU sets are canonical Linux list strings; -1 means "none" (no NUMA node, no L3, ...).
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/cpu_topology.h"
#include "common/driver_config.h"
#include "common/status.h"

namespace dracpu::dra {

struct DriverSection {
  int pid = 0;
  std::vector<ConfigField> fields;  // in order
};

struct ReportHeader {
  std::string tool_name;     // "dracpu-dra-agent"
  std::string tool_version;  // "0.1.0"
  std::string sysfs_root;    // as given on the command line
  std::optional<DriverSection> driver;
  // The kubelet's CPU Manager state as seen from here (kubeletCpuManager: stateFile, found,
  // policyName, conflict); empty: not looked at.
  std::vector<ConfigField> kubelet_cpu_manager;
  std::string node_map;  // the text node map; "" leaves it out of the report
};

std::string RenderTopologyJson(const CpuTopology& topo, const ReportHeader& header);
// A YAML document starting with "---" so reports can be concatenated. INTERNAL if the YAML
// emitter fails (it does not for these inputs; its exceptions are caught here).
Result<std::string> RenderTopologyYaml(const CpuTopology& topo, const ReportHeader& header);
// A few aligned lines per level for people (make demo).
std::string RenderTopologySummary(const CpuTopology& topo, const ReportHeader& header);

}  // namespace dracpu::dra
