// DriverConfig: the node-wide settings both agents read from one flat YAML file (the Helm chart's
// driverConfig ConfigMap), with the reference driver's keys plus ours.
//
// File format: a flat YAML mapping, optional `apiVersion: v1alpha1`. Every key is camelCase and
// matched exactly; unknown keys, duplicate keys, keys in the wrong case and bad values are all
// refused, and every problem is reported at once, each with the key, the value and the line.
// Keys the reference driver refuses in the file (bindAddress, exposePCIeRoots, kubeletRootDir)
// are refused here too (they are flags). `sysfsOverlay` is refused: use --sysfs-root instead.
//
// Precedence: built-in defaults < file < explicitly set flags (the agents' main applies flags
// after LoadDriverConfigFile).
#pragma once

#include <string>
#include <string_view>

#include "common/cpu_set.h"
#include "common/status.h"

namespace dracpu {

enum class CpuDeviceMode { kGrouped, kIndividual };
enum class GroupBy { kNumaNode, kSocket, kMachine };
// When the nri-agent may push unsolicited UpdateContainers to widen the shared pool.
enum class SharedPoolUpdates { kAuto, kAlways, kNever };
enum class CoreTypePreference { kPerformance, kEfficiency, kAny };

// Node-wide placement defaults (a claim's opaque `policy` config may override them per claim).
struct PlacementPolicy {
  bool full_pcpus_only = false;
  bool distribute_cpus_across_numa = false;
  bool align_by_socket = false;
  bool prefer_align_cpus_by_uncorecache = true;
  bool distribute_cpus_across_cores = false;
  CoreTypePreference core_type = CoreTypePreference::kPerformance;
  bool align_memory = false;  // nri-agent: cpuset.mems = the claim's NUMA nodes
};

struct DriverConfig {
  // Reference driver keys.
  CpuDeviceMode cpu_device_mode = CpuDeviceMode::kGrouped;
  GroupBy group_by = GroupBy::kNumaNode;
  CpuSet reserved_cpus;
  std::string hostname_override;
  std::string kubeconfig;
  bool publish_node_allocatable_resource_mapping = false;
  // Ours.
  bool strict_cpu_reservation = true;  // false: reserved CPUs join the shared pool
  int min_shared_cpus = 1;             // shared-pool floor kept out of the devices' capacity
  SharedPoolUpdates shared_pool_updates = SharedPoolUpdates::kAuto;
  PlacementPolicy policy;
};

// Parses the YAML text of a config file onto `config` (which holds defaults or earlier values).
// `source` names the file in messages. On error `config` is left unchanged and the Status
// (INVALID_ARGUMENT) lists every problem, one per line: "<source>:<line>: key \"k\": reason".
Status ParseDriverConfig(std::string_view yaml_text, std::string_view source, DriverConfig& config);

// Spellings used in the file, flags and messages.
std::string_view CpuDeviceModeName(CpuDeviceMode mode);  // "grouped" / "individual"
std::string_view GroupByName(GroupBy group_by);          // "numanode" / "socket" / "machine"
std::string_view SharedPoolUpdatesName(SharedPoolUpdates updates);  // "auto" / "always" / "never"
std::string_view CoreTypePreferenceName(CoreTypePreference pref);   // "performance" / ...
Result<CpuDeviceMode> ParseCpuDeviceMode(std::string_view text);
Result<GroupBy> ParseGroupBy(std::string_view text);
Result<SharedPoolUpdates> ParseSharedPoolUpdates(std::string_view text);
Result<CoreTypePreference> ParseCoreTypePreference(std::string_view text);
// "true"/"false" (YAML 1.2 core schema booleans only).
Result<bool> ParseBool(std::string_view text);

// The effective configuration as flat YAML (every key, defaults included), for logs and
// gatherinfo. Parsing it back gives the same config.
std::string DriverConfigToYaml(const DriverConfig& config);

}  // namespace dracpu
