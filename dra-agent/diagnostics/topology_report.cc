#include "dra-agent/diagnostics/topology_report.h"

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <map>
#include <sstream>
#include <string_view>

namespace dracpu::dra {
namespace {

using rapidjson::Document;
using rapidjson::Value;

class TreeBuilder {
 public:
  explicit TreeBuilder(Document& doc) : doc_(doc), alloc_(doc.GetAllocator()) {}

  Value Str(const std::string& s) {
    return Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), alloc_);
  }
  Value Set(const CpuSet& set) { return Str(set.ToListString()); }
  void Add(Value& obj, const char* key, Value v) { obj.AddMember(Value(key, alloc_), v, alloc_); }
  void Add(Value& obj, const char* key, int v) {
    obj.AddMember(Value(key, alloc_), Value(v), alloc_);
  }
  void Add(Value& obj, const char* key, bool v) {
    obj.AddMember(Value(key, alloc_), Value(v), alloc_);
  }
  void Add(Value& obj, const char* key, const CpuSet& s) { Add(obj, key, Set(s)); }
  void Add(Value& obj, const char* key, const std::string& s) { Add(obj, key, Str(s)); }
  void Push(Value& array, Value v) { array.PushBack(v, alloc_); }

  Value Groups(const std::vector<CpuGroup>& groups) {
    Value out(rapidjson::kArrayType);
    for (const CpuGroup& g : groups) {
      Value o(rapidjson::kObjectType);
      Add(o, "id", g.id);
      Add(o, "cpus", g.cpus);
      Push(out, std::move(o));
    }
    return out;
  }
  template <typename T>
  Value PackageGroups(const std::vector<T>& groups) {
    Value out(rapidjson::kArrayType);
    for (const T& g : groups) {
      Value o(rapidjson::kObjectType);
      Add(o, "package", g.package);
      Add(o, "id", g.id);
      Add(o, "cpus", g.cpus);
      Push(out, std::move(o));
    }
    return out;
  }

  void Build(const CpuTopology& topo, const ReportHeader& header) {
    doc_.SetObject();
    Value& root = doc_;
    Add(root, "layoutVersion", std::string("v1"));
    Value tool(rapidjson::kObjectType);
    Add(tool, "name", header.tool_name);
    Add(tool, "version", header.tool_version);
    Add(root, "toolVersion", std::move(tool));
    Add(root, "sysfsRoot", header.sysfs_root);
    Value t(rapidjson::kObjectType);
    Add(t, "online", topo.online);
    Add(t, "offline", topo.offline);
    Add(t, "present", topo.present);
    Add(t, "possible", topo.possible);
    Add(t, "isolated", topo.isolated);
    Add(t, "smtEnabled", topo.smt_enabled);
    Add(t, "smtControl", topo.smt_control);
    Add(t, "threadsPerCore", topo.MaxThreadsPerCore());
    Value widths(rapidjson::kArrayType);
    for (const int w : topo.threads_per_core) Push(widths, Value(w));
    Add(t, "threadsPerCoreValues", std::move(widths));
    Add(t, "packages", Groups(topo.packages));
    Add(t, "dies", PackageGroups(topo.dies));
    Add(t, "clusters", PackageGroups(topo.clusters));
    Value nodes(rapidjson::kArrayType);
    for (const NumaNode& n : topo.numa_nodes) {
      Value o(rapidjson::kObjectType);
      Add(o, "id", n.id);
      Add(o, "cpus", n.cpus);
      Value d(rapidjson::kObjectType);
      for (const auto& [to, distance] : n.distances) {
        d.AddMember(Str(std::to_string(to)), Value(distance), alloc_);
      }
      Add(o, "distances", std::move(d));
      Push(nodes, std::move(o));
    }
    Add(t, "numaNodes", std::move(nodes));
    Add(t, "l3Caches", Groups(topo.l3_caches));
    Add(t, "l2Caches", Groups(topo.l2_caches));
    Value cores(rapidjson::kArrayType);
    for (const Core& c : topo.cores) {
      Value o(rapidjson::kObjectType);
      Add(o, "id", c.id);
      Add(o, "cpus", c.cpus);
      Add(o, "type", std::string(CoreTypeName(c.type)));
      Add(o, "package", c.package);
      Push(cores, std::move(o));
    }
    Add(t, "cores", std::move(cores));
    Value cpus(rapidjson::kArrayType);
    for (const CpuInfo& c : topo.cpus) {
      Value o(rapidjson::kObjectType);
      Add(o, "id", c.id);
      Add(o, "package", c.package);
      Add(o, "die", c.die);
      Add(o, "cluster", c.cluster);
      Add(o, "numaNode", c.numa_node);
      Add(o, "core", c.core);
      Add(o, "l2", c.l2);
      Add(o, "l3", c.l3);
      Add(o, "type", std::string(CoreTypeName(c.type)));
      Add(o, "capacity", c.capacity);
      Push(cpus, std::move(o));
    }
    Add(t, "cpus", std::move(cpus));
    Value roots(rapidjson::kArrayType);
    for (const PcieRoot& r : topo.pcie_roots) {
      Value o(rapidjson::kObjectType);
      Add(o, "name", r.name);
      Add(o, "cpus", r.cpus);
      Push(roots, std::move(o));
    }
    Add(t, "pcieRoots", std::move(roots));
    Add(root, "topology", std::move(t));
    Add(root, "cpuDetails", CpuDetails(topo));
    if (header.driver) {
      Value d = Fields(header.driver->fields);
      Add(d, "driverPid", header.driver->pid);
      Add(root, "driverConfig", std::move(d));
    }
    if (!header.kubelet_cpu_manager.empty()) {
      Add(root, "kubeletCpuManager", Fields(header.kubelet_cpu_manager));
    }
    Value warnings(rapidjson::kArrayType);
    for (const std::string& w : topo.warnings) Push(warnings, Str(w));
    Add(root, "warnings", std::move(warnings));
    if (!header.node_map.empty()) Add(root, "nodeMap", header.node_map);
  }

 private:
  Value Fields(const std::vector<ConfigField>& fields) {
    Value d(rapidjson::kObjectType);
    for (const ConfigField& f : fields) {
      if (const auto* s = std::get_if<std::string>(&f.value)) {
        d.AddMember(Str(f.key), Str(*s), alloc_);
      } else if (const auto* b = std::get_if<bool>(&f.value)) {
        d.AddMember(Str(f.key), Value(*b), alloc_);
      } else {
        d.AddMember(Str(f.key), Value(std::get<int>(f.value)), alloc_);
      }
    }
    return d;
  }

  // The reference gatherinfo's view: its per-CPU fields and counts. coreID is dracpu's core id
  // (the core's lowest CPU, as dra.cpu/coreID), sibling the other thread of a 2-thread core.
  Value CpuDetails(const CpuTopology& topo) {
    std::map<int, const NumaNode*> nodes;
    for (const NumaNode& n : topo.numa_nodes) nodes[n.id] = &n;
    std::map<int, const Core*> cores;
    for (const Core& c : topo.cores) cores[c.id] = &c;
    int numa_with_cpus = 0;
    for (const NumaNode& n : topo.numa_nodes) numa_with_cpus += n.cpus.Empty() ? 0 : 1;
    Value summary(rapidjson::kObjectType);
    Add(summary, "numCPUs", topo.online.Count());
    Add(summary, "numCores", static_cast<int>(topo.cores.size()));
    Add(summary, "numUncoreCache", static_cast<int>(topo.l3_caches.size()));
    Add(summary, "numSockets", static_cast<int>(topo.packages.size()));
    Add(summary, "numNUMANodes", numa_with_cpus);
    Add(summary, "smtEnabled", topo.smt_enabled);
    Value cpus(rapidjson::kArrayType);
    for (const CpuInfo& c : topo.cpus) {
      Value o(rapidjson::kObjectType);
      Add(o, "cpuID", c.id);
      Add(o, "coreID", c.core);
      Add(o, "socketID", c.package);
      Add(o, "clusterID", c.cluster);
      Add(o, "numaNodeID", c.numa_node);
      if (auto n = nodes.find(c.numa_node); n != nodes.end()) {
        Add(o, "numaNodeCPUSet", n->second->cpus);
      }
      int sibling = -1;
      if (auto core = cores.find(c.core); core != cores.end() && core->second->cpus.Count() == 2) {
        for (const int other : core->second->cpus) {
          if (other != c.id) sibling = other;
        }
      }
      Add(o, "sibling", sibling);
      Add(o, "coreType", std::string(CoreTypeName(c.type)));
      Add(o, "uncoreCacheID", c.l3);
      Push(cpus, std::move(o));
    }
    Value details(rapidjson::kObjectType);
    Add(details, "topology", std::move(summary));
    Add(details, "cpus", std::move(cpus));
    return details;
  }

  Document& doc_;
  Document::AllocatorType& alloc_;
};

// Walks the JSON tree; strings are always double-quoted so "0" stays a CPU list, not a number.
void EmitYaml(const Value& v, YAML::Emitter& out) {
  if (v.IsObject()) {
    out << YAML::BeginMap;
    for (const auto& m : v.GetObject()) {
      const char* key = m.name.GetString();
      out << YAML::Key;
      // Numeric keys (distances) stay strings, as in the JSON form.
      if (key[0] >= '0' && key[0] <= '9') out << YAML::DoubleQuoted;
      out << key << YAML::Value;
      EmitYaml(m.value, out);
    }
    out << YAML::EndMap;
  } else if (v.IsArray()) {
    // Short scalar arrays (threadsPerCoreValues) read better inline.
    const bool flow = !v.Empty() && v[0].IsNumber();
    out << (flow ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& e : v.GetArray()) EmitYaml(e, out);
    out << YAML::EndSeq;
  } else if (v.IsString()) {
    // The node map is many lines: a literal block keeps it readable.
    const bool lines = std::string_view(v.GetString()).find('\n') != std::string_view::npos;
    out << (lines ? YAML::Literal : YAML::DoubleQuoted) << v.GetString();
  } else if (v.IsBool()) {
    out << YAML::TrueFalseBool << v.GetBool();
  } else if (v.IsInt()) {
    out << v.GetInt();
  } else {
    out << YAML::Null;
  }
}

std::string OrDash(const CpuSet& set) { return set.Empty() ? "-" : set.ToListString(); }

std::string Counted(const CpuSet& set) {
  return OrDash(set) + " (" + std::to_string(set.Count()) + ")";
}

}  // namespace

std::string RenderTopologyJson(const CpuTopology& topo, const ReportHeader& header) {
  Document doc;
  TreeBuilder(doc).Build(topo, header);
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

Result<std::string> RenderTopologyYaml(const CpuTopology& topo, const ReportHeader& header) {
  Document doc;
  TreeBuilder(doc).Build(topo, header);
  try {
    YAML::Emitter out;
    out << YAML::BeginDoc;
    EmitYaml(doc, out);
    if (!out.good()) return InternalError("YAML emitter: " + out.GetLastError());
    return std::string(out.c_str()) + "\n";
  } catch (const std::exception& e) {
    return InternalError(std::string("YAML emitter: ") + e.what());
  }
}

std::string RenderTopologySummary(const CpuTopology& topo, const ReportHeader& header) {
  std::ostringstream os;
  os << "CPU topology of " << header.sysfs_root << " (" << header.tool_name << " "
     << header.tool_version << ")\n";
  os << "  CPUs      online " << Counted(topo.online) << ", offline " << OrDash(topo.offline)
     << ", present " << OrDash(topo.present) << ", isolated " << OrDash(topo.isolated) << "\n";
  os << "  SMT       " << (topo.smt_enabled ? "on" : "off");
  if (!topo.smt_control.empty()) os << " (smt/control: " << topo.smt_control << ")";
  os << ", threads per core:";
  for (const int w : topo.threads_per_core) os << " " << w;
  os << "\n";
  os << "  Packages  " << topo.packages.size() << "\n";
  for (const CpuGroup& p : topo.packages) {
    os << "    package " << p.id << ": " << Counted(p.cpus) << "\n";
  }
  if (!topo.dies.empty()) os << "  Dies      " << topo.dies.size() << "\n";
  if (!topo.clusters.empty()) os << "  Clusters  " << topo.clusters.size() << "\n";
  os << "  NUMA      " << topo.numa_nodes.size() << " node(s)\n";
  for (const NumaNode& n : topo.numa_nodes) {
    os << "    node " << n.id << ": " << (n.cpus.Empty() ? "no CPUs" : Counted(n.cpus));
    if (!n.distances.empty()) {
      os << ", distances";
      for (const auto& [to, d] : n.distances) os << " " << to << ":" << d;
    }
    os << "\n";
  }
  os << "  L3        " << topo.l3_caches.size() << " group(s)\n";
  // Large machines have dozens of L3 groups (POWER7: 64): show the first few.
  constexpr size_t kMaxListed = 12;
  for (size_t i = 0; i < topo.l3_caches.size() && i < kMaxListed; ++i) {
    os << "    L3 " << topo.l3_caches[i].id << ": " << Counted(topo.l3_caches[i].cpus) << "\n";
  }
  if (topo.l3_caches.size() > kMaxListed) {
    os << "    ... " << topo.l3_caches.size() - kMaxListed << " more\n";
  }
  os << "  L2        " << topo.l2_caches.size() << " group(s)\n";
  std::map<int, int> by_width;
  std::map<std::string, int> by_type;
  for (const Core& c : topo.cores) {
    ++by_width[c.cpus.Count()];
    ++by_type[CoreTypeName(c.type)];
  }
  os << "  Cores     " << topo.cores.size() << " (";
  bool first = true;
  for (const auto& [width, count] : by_width) {
    os << (first ? "" : ", ") << count << " with " << width << " thread" << (width > 1 ? "s" : "");
    first = false;
  }
  os << "); types:";
  for (const auto& [type, count] : by_type) os << " " << type << " " << count;
  os << "\n";
  std::map<int, CpuSet> capacities;
  for (const CpuInfo& c : topo.cpus) {
    if (c.capacity >= 0) capacities[c.capacity].Set(c.id);
  }
  if (!capacities.empty()) {
    os << "  Capacity ";
    for (const auto& [cap, cpus] : capacities)
      os << " " << cap << ": " << cpus.ToListString() << ";";
    os << "\n";
  }
  if (!topo.pcie_roots.empty()) {
    os << "  PCIe      " << topo.pcie_roots.size() << " root(s)\n";
    for (const PcieRoot& r : topo.pcie_roots) {
      os << "    " << r.name << ": " << OrDash(r.cpus) << "\n";
    }
  }
  if (header.driver) {
    os << "  Driver    pid " << header.driver->pid;
    for (const ConfigField& f : header.driver->fields) {
      if (f.key == "cpuDeviceMode" || f.key == "groupBy" || f.key == "reservedCPUs") {
        os << ", " << f.key << " ";
        if (const auto* v = std::get_if<std::string>(&f.value)) os << (v->empty() ? "-" : *v);
      }
    }
    os << "\n";
  }
  for (const ConfigField& f : header.kubelet_cpu_manager) {
    if (const auto* v = std::get_if<std::string>(&f.value);
        f.key == "conflict" && v && !v->empty()) {
      os << "  CONFLICT  " << *v << "\n";
    }
  }
  os << "  Warnings  " << (topo.warnings.empty() ? "none" : std::to_string(topo.warnings.size()))
     << "\n";
  for (const std::string& w : topo.warnings) os << "    - " << w << "\n";
  if (!header.node_map.empty()) os << "\nNode map (dracpu-shm map)\n" << header.node_map;
  return os.str();
}

}  // namespace dracpu::dra
