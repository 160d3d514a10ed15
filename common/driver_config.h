// DriverConfig: the node-wide settings both agents read from one flat YAML file (the Helm chart's
// driverConfig ConfigMap), with the reference driver's keys plus ours.
//
// File format: a flat YAML mapping, optional `apiVersion: v1alpha1`. Every key is camelCase and
// matched exactly; unknown keys, duplicate keys, keys in the wrong case and bad values are all
// refused, and every problem is reported at once, each with the key, the value and the line.
// Keys the reference driver refuses in the file (bindAddress, exposePCIeRoots, kubeletRootDir)
// are refused here too (they are flags). The placement keys (fullPCPUsOnly, ...) and their
// aliases are common/placement_policy.h's, the same vocabulary as a claim's `policy`.
//
// Precedence: built-in defaults < file < explicitly set flags (the agents' main applies flags
// after LoadDriverConfigFile).
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/cpu_set.h"
#include "common/placement_policy.h"
#include "common/status.h"

namespace dracpu {

enum class CpuDeviceMode { kGrouped, kIndividual };
enum class GroupBy { kNumaNode, kSocket, kMachine };
// When the nri-agent may push unsolicited UpdateContainers to widen the shared pool.
enum class SharedPoolUpdates { kAuto, kAlways, kNever };
struct DriverConfig {
  // Reference driver keys.
  CpuDeviceMode cpu_device_mode = CpuDeviceMode::kGrouped;
  GroupBy group_by = GroupBy::kNumaNode;
  CpuSet reserved_cpus;
  std::string hostname_override;
  std::string kubeconfig;
  bool publish_node_allocatable_resource_mapping = false;
  // Path of a sysfs overlay file (common/sysfs_overlay.h), read over the sysfs tree; "" = none.
  std::string sysfs_overlay;
  // Ours.
  bool strict_cpu_reservation = true;  // false: reserved CPUs join the shared pool
  int min_shared_cpus = 1;             // shared-pool floor kept out of the devices' capacity
  SharedPoolUpdates shared_pool_updates = SharedPoolUpdates::kAuto;
  PlacementPolicy policy;  // node-wide; a claim's opaque `policy` overrides it per claim
};

// Parses the YAML text of a config file onto `config` (which holds defaults or earlier values).
// `source` names the file in messages. On error `config` is left unchanged and the Status
// (INVALID_ARGUMENT) lists every problem, one per line: "<source>:<line>: key \"k\": reason".
Status ParseDriverConfig(std::string_view yaml_text, std::string_view source, DriverConfig& config);

// Spellings used in the file, flags and messages.
std::string_view CpuDeviceModeName(CpuDeviceMode mode);  // "grouped" / "individual"
std::string_view GroupByName(GroupBy group_by);          // "numanode" / "socket" / "machine"
std::string_view SharedPoolUpdatesName(SharedPoolUpdates updates);  // "auto" / "always" / "never"
Result<CpuDeviceMode> ParseCpuDeviceMode(std::string_view text);
Result<GroupBy> ParseGroupBy(std::string_view text);
Result<SharedPoolUpdates> ParseSharedPoolUpdates(std::string_view text);

// Every key of the file with its value (defaults included), in the order the docs list them.
using ConfigValue = std::variant<std::string, bool, int>;
struct ConfigField {
  std::string key;
  ConfigValue value;
};
std::vector<ConfigField> DriverConfigFields(const DriverConfig& config);

// The effective configuration as flat YAML (every key, defaults included), for logs. Parsing it
// back gives the same config.
std::string DriverConfigToYaml(const DriverConfig& config);

}  // namespace dracpu
