// Topology discovery: reads a node's CPU topology from sysfs into a CpuTopology.
//
// Reads <root>/sys/devices/system/{cpu,node}/..., <root>/sys/devices/cpu_{core,atom}/cpus and
// <root>/sys/devices/pciDDDD:BB/... through the injected FileSystem (whose root is the sysfs root,
// "/" on a host). Every quirk of real machines (../shared/sysfs-corpus/README.md) has one rule,
// written down in docs/topology.md; where discovery had to decide, it adds a sentence to
// CpuTopology::warnings rather than failing.
//
// Errors: a file that exists but cannot be read or parsed (empty, garbage, larger than
// kMaxSysfsAttributeSize) is an error whose message names the file and the reason; a missing
// optional file is not an error. NOT_FOUND when <root>/sys/devices/system/cpu does not exist,
// FAILED_PRECONDITION when no online CPU can be found.
//
// Thread safety: a pure function of the filesystem content.
#pragma once

#include "common/cpu_topology.h"
#include "common/file_system.h"
#include "common/status.h"

namespace dracpu {

struct DiscoveryOptions {
  // Read PCIe root complexes and their local CPUs (/sys/devices/pciDDDD:BB).
  bool pcie_roots = true;
};

// Fills every field of CpuTopology and returns a topology that passes CpuTopology::Validate().
Result<CpuTopology> DiscoverTopology(const FileSystem& fs, const DiscoveryOptions& options = {});

}  // namespace dracpu
