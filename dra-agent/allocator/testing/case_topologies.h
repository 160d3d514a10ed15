// Test-only: topologies of ../shared/alloc-cases/topologies.json by name.
#pragma once

#include <rapidjson/document.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/status.h"
#include "dra-agent/allocator/topology_builder.h"

namespace dracpu::allocator::testing {

struct CaseCpu {
  CpuRecord record;
  int source_core = -1;  // the fixture's own CoreID when `core` had to be renumbered
};

inline Result<std::vector<CaseCpu>> LoadCaseCpus(const std::string& shared_dir,
                                                 const std::string& name) {
  const std::string path = shared_dir + "/alloc-cases/topologies.json";
  std::ifstream in(path);
  if (!in) return NotFoundError("cannot open " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  rapidjson::Document doc;
  doc.Parse(text.c_str());
  if (doc.HasParseError()) return DataLossError(path + ": invalid JSON");
  for (const auto& t : doc["topologies"].GetArray()) {
    if (name != t["name"].GetString()) continue;
    std::vector<CaseCpu> out;
    for (const auto& c : t["cpus"].GetArray()) {
      CaseCpu cpu;
      cpu.record = {c["cpu"].GetInt(),  c["core"].GetInt(), c["socket"].GetInt(),
                    c["numa"].GetInt(), c["l3"].GetInt(),   CoreType::kStandard};
      if (c.HasMember("coreType")) {
        cpu.record.type = std::string(c["coreType"].GetString()) == "efficiency"
                              ? CoreType::kEfficiency
                              : CoreType::kPerformance;
      }
      cpu.source_core = c.HasMember("sourceCoreId") ? c["sourceCoreId"].GetInt() : cpu.record.core;
      out.push_back(cpu);
    }
    return out;
  }
  return NotFoundError("no topology " + name + " in " + path);
}

inline Result<CpuTopology> LoadCaseTopology(const std::string& shared_dir,
                                            const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<CaseCpu> cpus, LoadCaseCpus(shared_dir, name));
  std::vector<CpuRecord> records;
  for (const CaseCpu& c : cpus) records.push_back(c.record);
  return BuildTopologyFromRecords(records);
}

}  // namespace dracpu::allocator::testing
