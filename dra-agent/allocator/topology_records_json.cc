#include "dra-agent/allocator/topology_records_json.h"

#include <fstream>
#include <iterator>
#include <string_view>

#include "common/untrusted_json.h"

namespace dracpu::allocator {
namespace {

using rapidjson::Value;

Result<int> GetInt(const Value& v, const std::string& field, int min) {
  if (!v.IsInt() || v.GetInt() < min) {
    return InvalidArgumentError(field + ": must be an integer >= " + std::to_string(min));
  }
  return v.GetInt();
}

Result<CoreType> ParseCoreType(const Value& v, const std::string& field) {
  if (v.IsString()) {
    const std::string_view s(v.GetString(), v.GetStringLength());
    if (s == "standard") return CoreType::kStandard;
    if (s == "performance" || s == "p-core") return CoreType::kPerformance;
    if (s == "efficiency" || s == "e-core") return CoreType::kEfficiency;
  }
  return InvalidArgumentError(field + ": must be one of standard, performance, efficiency");
}

Result<CpuRecordsJson> ParseCpu(const Value& c, const std::string& at, CpuRecordsJson out) {
  if (!c.IsObject()) return InvalidArgumentError(at + ": must be an object");
  CpuRecord r;
  struct IntField {
    const char* name;
    int* out;
    bool required;
  };
  const IntField fields[] = {{"cpu", &r.cpu, true},
                             {"core", &r.core, true},
                             {"socket", &r.socket, true},
                             {"numa", &r.numa, false},
                             {"l3", &r.l3, false}};
  for (const IntField& f : fields) {
    auto it = c.FindMember(f.name);
    if (it == c.MemberEnd()) {
      if (f.required) return InvalidArgumentError(at + "." + f.name + ": missing");
      continue;
    }
    ASSIGN_OR_RETURN(*f.out, GetInt(it->value, at + "." + f.name, f.required ? 0 : -1));
  }
  if (auto it = c.FindMember("coreType"); it != c.MemberEnd()) {
    ASSIGN_OR_RETURN(r.type, ParseCoreType(it->value, at + ".coreType"));
  }
  int source_core = r.core;
  if (auto it = c.FindMember("sourceCoreId"); it != c.MemberEnd()) {
    ASSIGN_OR_RETURN(source_core, GetInt(it->value, at + ".sourceCoreId", 0));
  }
  out.records.push_back(r);
  out.source_cores.push_back(source_core);
  return out;
}

}  // namespace

Result<CpuRecordsJson> ParseCpuRecordsJson(const Value& cpus, const std::string& field) {
  if (!cpus.IsArray() || cpus.Empty())
    return InvalidArgumentError(field + ": must be a non-empty array");
  CpuRecordsJson out;
  for (rapidjson::SizeType i = 0; i < cpus.Size(); ++i) {
    ASSIGN_OR_RETURN(out, ParseCpu(cpus[i], field + "[" + std::to_string(i) + "]", std::move(out)));
  }
  return out;
}

Result<std::vector<NamedTopologyJson>> ReadTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot open " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  rapidjson::Document doc;
  RETURN_IF_ERROR(ParseUntrustedJson(text, doc).WithContext(path));
  const Value* list = &doc;
  if (doc.IsObject() && doc.HasMember("topologies")) list = &doc["topologies"];
  if (!list->IsArray()) {
    return InvalidArgumentError(path + ": expected {\"topologies\": [...]} or an array");
  }
  std::vector<NamedTopologyJson> out;
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    const Value& t = (*list)[i];
    const std::string at = path + ": topologies[" + std::to_string(i) + "]";
    if (!t.IsObject() || !t.HasMember("name") || !t["name"].IsString()) {
      return InvalidArgumentError(at + ": must be an object with a string \"name\"");
    }
    NamedTopologyJson named;
    named.name.assign(t["name"].GetString(), t["name"].GetStringLength());
    if (!t.HasMember("cpus")) return InvalidArgumentError(at + " (" + named.name + "): no cpus");
    ASSIGN_OR_RETURN(named.cpus,
                     ParseCpuRecordsJson(t["cpus"], "topology " + named.name + ".cpus"));
    out.push_back(std::move(named));
  }
  return out;
}

Result<NamedTopologyJson> ReadNamedTopology(const std::string& path, const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<NamedTopologyJson> all, ReadTopologyFile(path));
  for (NamedTopologyJson& t : all) {
    if (t.name == name) return std::move(t);
  }
  return InvalidArgumentError("no topology named \"" + name + "\" in " + path);
}

}  // namespace dracpu::allocator
