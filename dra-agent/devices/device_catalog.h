// DeviceCatalog: the devices this node publishes, derived from the topology and the config, with
// the CPUs behind each. The ResourceSlice publisher renders it; Prepare uses it to map an
// allocated device name to its CPUs; health uses the CPUs to tell when a device degrades.
//
// Names and attributes follow the Go reference driver (reference-driver.md §2.3) so claims and
// CEL selectors keep working after a switch:
//  * grouped numanode: one device per NUMA node with allocatable CPUs, "cpudevnuma%03d"
//  * grouped socket:   "cpudevsocket%03d";   grouped machine: one "cpudevmachine"
//  * individual:       one device per allocatable CPU, "cpudev%03d", numbered over CPUs sorted by
//    id where each unvisited CPU is followed by its allocatable SMT siblings (any SMT width).
// Ours beyond the reference (docs/resourceslices.md):
//  * capacity dra.cpu/cpu carries a requestPolicy (MakeCapacityPolicy) that the API server
//    accepts for every capacity: validRange {min, max, step} with a default; with fullPCPUsOnly
//    min = step = threads per core, so the scheduler rounds requests up to whole cores;
//  * the shared-pool floor (minSharedCPUs) is kept out of the published capacity: taken from the
//    first grouped devices in name order, or, in individual mode, the lowest allocatable CPUs
//    are not published;
//  * dra.cpu/coreID is the core's lowest CPU id (unique machine-wide), not the raw sysfs core_id
//    (unique only within a package, reference-driver.md §9).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/cpu_set.h"
#include "common/cpu_topology.h"
#include "common/driver_config.h"
#include "common/status.h"

namespace dracpu::dra {

inline constexpr char kCpuCapacityName[] = "dra.cpu/cpu";

// One typed attribute value: int, bool, string, or a list of strings (pcieRoot).
using AttributeValue = std::variant<int64_t, bool, std::string, std::vector<std::string>>;

// The requestPolicy of a device's dra.cpu/cpu capacity: validRange {min, max, step} plus the
// default a request without a capacity entry gets. Valid for the capacity by construction
// (resourceslice-validation.md rules 42-55): min <= max <= capacity, default = max, max - min a
// multiple of step, and no step when min + step would exceed the capacity (a one-value range,
// e.g. a device of 1 CPU, or of one core under fullPCPUsOnly).
struct CapacityPolicy {
  int64_t min = 1;
  int64_t max = 1;
  std::optional<int64_t> step;
  // = max: a request that names no capacity asks for the whole device, as with the reference
  // driver (no policy) and as when the cluster allocates devices whole (no consumable capacity).
  int64_t default_value = 1;
};

// The policy for `capacity` CPUs granted in units of `granule` (1, or threads per core under
// fullPCPUsOnly); nullopt when not even one unit fits (such a device is not published).
std::optional<CapacityPolicy> MakeCapacityPolicy(int64_t capacity, int64_t granule);

struct CatalogDevice {
  std::string name;
  std::map<std::string, AttributeValue> attributes;  // qualified name -> value
  // Grouped devices: dra.cpu/cpu capacity (published CPUs) and its request policy.
  std::optional<int64_t> cpu_capacity;
  std::optional<CapacityPolicy> capacity_policy;
  bool allow_multiple_allocations = false;
  CpuSet cpus;        // CPUs the device hands out (its published share)
  CpuSet group_cpus;  // every allocatable CPU of the group (for health and placement)
  bool uses_list_attributes = false;
};

struct CatalogOptions {
  CpuDeviceMode mode = CpuDeviceMode::kGrouped;
  GroupBy group_by = GroupBy::kNumaNode;
  CpuSet reserved;
  bool strict_cpu_reservation = true;
  int min_shared_cpus = 1;
  bool full_pcpus_only = false;
  bool expose_pcie_roots = false;
  bool publish_node_allocatable_mapping = false;
};

struct DeviceCatalog {
  std::vector<CatalogDevice> devices;  // in name order (= preference order for the scheduler)
  CpuSet allocatable;                  // online minus reserved
  CpuSet floor;                        // CPUs kept for the shared pool (individual mode)
  CatalogOptions options;

  const CatalogDevice* Find(std::string_view name) const;
};

// Builds the catalog. FAILED_PRECONDITION when the floor cannot be met (fewer allocatable CPUs
// than minSharedCPUs), with the numbers.
Result<DeviceCatalog> BuildDeviceCatalog(const CpuTopology& topology,
                                         const CatalogOptions& options);

// After a topology change (CPU hotplug), in individual mode: gives every device of `rebuilt` the
// name its CPU had in `startup`, drops the devices whose CPU had no start-up device, and keeps the
// start-up order. Individual names are numbered consecutively, so a rebuilt catalog would shift
// names to other CPUs while Prepare and the health stream (which keep the start-up catalog) and
// claims already allocated still mean the start-up CPUs. Grouped names are by NUMA node or socket
// id, hence stable: `rebuilt` is left unchanged in grouped mode.
void KeepStartupDeviceNames(const DeviceCatalog& startup, DeviceCatalog& rebuilt);

// "cpudevnuma000"-style names.
std::string NumaDeviceName(int numa_node);
std::string SocketDeviceName(int socket);
std::string IndividualDeviceName(int index);

}  // namespace dracpu::dra
