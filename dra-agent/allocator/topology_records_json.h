// Per-CPU topology records in JSON, the one reader of both forms the project uses:
//  * a `cpus` array: [{"cpu", "core", "socket", "numa"?, "l3"?, "coreType"?, "sourceCoreId"?}]
//    (the `allocate` command's inline topology);
//  * a file of named topologies, {"topologies": [{"name", "cpus"}]} or a bare array of those
//    (the `allocate` command's --topologies and ../shared/alloc-cases/topologies.json).
// `numa` and `l3` default to -1; `coreType` is standard|performance|p-core|efficiency|e-core;
// `sourceCoreId` is the fixture's own core id where `core` was renumbered (kept for tests that
// compare against the fixture; defaults to `core`). Errors are INVALID_ARGUMENT naming the field
// (`<field>[i].core: missing`); an unreadable file is NOT_FOUND naming the path.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "dra-agent/allocator/topology_builder.h"

namespace dracpu::allocator {

struct CpuRecordsJson {
  std::vector<CpuRecord> records;
  std::vector<int> source_cores;  // parallel to records
};

struct NamedTopologyJson {
  std::string name;
  CpuRecordsJson cpus;
};

Result<CpuRecordsJson> ParseCpuRecordsJson(const rapidjson::Value& cpus, const std::string& field);

// Every topology of the file at `path`, in file order.
Result<std::vector<NamedTopologyJson>> ReadTopologyFile(const std::string& path);

// The topology called `name` in the file at `path` (INVALID_ARGUMENT when there is none).
Result<NamedTopologyJson> ReadNamedTopology(const std::string& path, const std::string& name);

}  // namespace dracpu::allocator
