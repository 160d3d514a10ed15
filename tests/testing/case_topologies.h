// Test-only: topologies of ../shared/alloc-cases/topologies.json by name, read with the
// allocator's own reader of that format (dra-agent/allocator/topology_records_json.h).
#pragma once

#include <string>
#include <vector>

#include "common/cpu_topology.h"
#include "common/status.h"
#include "dra-agent/allocator/topology_builder.h"
#include "dra-agent/allocator/topology_records_json.h"

namespace dracpu::testing {

inline std::string CaseTopologiesPath(const std::string& shared_dir) {
  return shared_dir + "/alloc-cases/topologies.json";
}

struct CaseCpu {
  allocator::CpuRecord record;
  int source_core = -1;  // the fixture's own CoreID when `core` had to be renumbered
};

inline Result<std::vector<std::string>> CaseTopologyNames(const std::string& shared_dir) {
  ASSIGN_OR_RETURN(std::vector<allocator::NamedTopologyJson> all,
                   allocator::ReadTopologyFile(CaseTopologiesPath(shared_dir)));
  std::vector<std::string> names;
  for (const allocator::NamedTopologyJson& t : all) names.push_back(t.name);
  return names;
}

inline Result<std::vector<CaseCpu>> LoadCaseCpus(const std::string& shared_dir,
                                                 const std::string& name) {
  ASSIGN_OR_RETURN(allocator::NamedTopologyJson t,
                   allocator::ReadNamedTopology(CaseTopologiesPath(shared_dir), name));
  std::vector<CaseCpu> out;
  for (size_t i = 0; i < t.cpus.records.size(); ++i) {
    out.push_back({t.cpus.records[i], t.cpus.source_cores[i]});
  }
  return out;
}

inline Result<CpuTopology> LoadCaseTopology(const std::string& shared_dir,
                                            const std::string& name) {
  ASSIGN_OR_RETURN(allocator::NamedTopologyJson t,
                   allocator::ReadNamedTopology(CaseTopologiesPath(shared_dir), name));
  return allocator::BuildTopologyFromRecords(t.cpus.records);
}

}  // namespace dracpu::testing
