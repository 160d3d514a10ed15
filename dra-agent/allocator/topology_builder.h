// Builds a CpuTopology from per-CPU records: the input form of the `allocate` CLI and of the
// allocation test data (../shared/alloc-cases/topologies.json), where each logical CPU names its
// core, socket, NUMA node, L3 group and core type.
//
// Record semantics:
//  * `core` groups SMT siblings and is unique machine-wide in this format. The built topology
//    renames each core to its lowest CPU id (CpuTopology's invariant); the record's id is not kept
//    because nothing downstream needs it.
//  * `l3` is the fixture's cache id. Some fixtures reuse one id across sockets although an L3 never
//    spans sockets; L3 groups are therefore keyed by (socket, l3). When an id is shared by several
//    sockets every L3 group is renumbered densely in (socket, l3) order and a warning says so.
//  * `numa` and `l3` may be -1 (no NUMA node / no L3 cache).
// Errors (INVALID_ARGUMENT, naming the CPU): duplicate or out-of-range CPU ids, negative core or
// socket ids, a core whose CPUs disagree on socket, NUMA node or core type, no CPUs at all.
#pragma once

#include <vector>

#include "common/cpu_topology.h"
#include "common/status.h"

namespace dracpu::allocator {

struct CpuRecord {
  int cpu = -1;
  int core = -1;
  int socket = -1;
  int numa = -1;
  int l3 = -1;
  CoreType type = CoreType::kStandard;
};

Result<CpuTopology> BuildTopologyFromRecords(const std::vector<CpuRecord>& records);

}  // namespace dracpu::allocator
