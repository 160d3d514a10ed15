#include "dra-agent/allocator/allocate_command.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "common/cpu_set.h"
#include "common/file_system.h"
#include "common/status.h"
#include "common/topology_discovery.h"
#include "common/untrusted_json.h"
#include "dra-agent/allocator/allocator.h"
#include "dra-agent/allocator/allocator_options.h"
#include "dra-agent/allocator/placement_metrics.h"
#include "dra-agent/allocator/topology_builder.h"
#include "dra-agent/allocator/topology_index.h"
#include "dra-agent/allocator/topology_records_json.h"

namespace dracpu::allocator {
namespace {

using rapidjson::Value;

// Everything the command needs from the input document, validated.
struct Input {
  CpuTopology topology;
  CpuSet available;
  CpuSet reserved;
  std::optional<CpuSet> shared_pool;
  int request = 0;
  std::vector<int> containers;
  std::vector<int> numa_affinity;
  PlacementPolicy options;
};

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Status ParseJson(const std::string& text, const std::string& what, rapidjson::Document* doc) {
  return ParseUntrustedJson(text, *doc).WithContext(what);
}

Result<int> GetInt(const Value& v, const std::string& field, int min) {
  if (!v.IsInt() || v.GetInt() < min) {
    return InvalidArgumentError(field + ": must be an integer >= " + std::to_string(min));
  }
  return v.GetInt();
}

// A CPU list: a JSON array of ids or a Linux list string ("0-3,8").
Result<CpuSet> GetCpuList(const Value& v, const std::string& field) {
  if (v.IsString()) {
    Result<CpuSet> parsed =
        CpuSet::ParseList(std::string_view(v.GetString(), v.GetStringLength()), field);
    if (!parsed.ok()) return InvalidArgumentError(parsed.status().message());
    return parsed;
  }
  if (!v.IsArray())
    return InvalidArgumentError(field + ": must be an array of CPU ids or a list string");
  CpuSet set;
  for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(int cpu, GetInt(v[i], item, 0));
    if (!set.Add(cpu).ok()) return InvalidArgumentError(item + ": CPU id out of range");
  }
  return set;
}

Result<CpuTopology> BuildFromRecords(const CpuRecordsJson& cpus, const std::string& field) {
  Result<CpuTopology> topo = BuildTopologyFromRecords(cpus.records);
  if (!topo.ok()) return InvalidArgumentError(field + ": " + topo.status().message());
  return topo;
}

Result<CpuTopology> ParseTopology(const Value& v,
                                  const std::optional<std::string>& topologies_file) {
  if (v.IsString()) {
    const std::string name(v.GetString(), v.GetStringLength());
    if (!topologies_file) {
      return InvalidArgumentError("topology: \"" + name +
                                  "\" is a name; pass --topologies FILE to resolve it");
    }
    Result<NamedTopologyJson> named = ReadNamedTopology(*topologies_file, name);
    if (!named.ok()) return InvalidArgumentError("--topologies: " + named.status().message());
    return BuildFromRecords(named->cpus, "topology " + name + ".cpus");
  }
  if (!v.IsObject()) return InvalidArgumentError("topology: must be an object or a name");
  if (auto it = v.FindMember("sysfsRoot"); it != v.MemberEnd()) {
    if (!it->value.IsString() || it->value.GetStringLength() == 0) {
      return InvalidArgumentError("topology.sysfsRoot: must be a non-empty directory path");
    }
    // The directory holding sys/devices/system/cpu (as gatherinfo's --sysfs-root).
    Result<std::unique_ptr<FileSystem>> fs = NewPosixFileSystem(it->value.GetString());
    if (!fs.ok()) return InvalidArgumentError("topology.sysfsRoot: " + fs.status().message());
    DiscoveryOptions options;
    options.pcie_roots = false;  // the allocator does not use PCIe locality
    Result<CpuTopology> topo = DiscoverTopology(**fs, options);
    if (!topo.ok()) return InvalidArgumentError("topology.sysfsRoot: " + topo.status().message());
    return topo;
  }
  if (!v.HasMember("cpus"))
    return InvalidArgumentError("topology: needs \"cpus\" or \"sysfsRoot\"");
  ASSIGN_OR_RETURN(CpuRecordsJson cpus, ParseCpuRecordsJson(v["cpus"], "topology.cpus"));
  return BuildFromRecords(cpus, "topology.cpus");
}

Result<Input> ParseInput(const rapidjson::Document& doc,
                         const std::optional<std::string>& topologies_file) {
  if (!doc.IsObject()) return InvalidArgumentError("input: must be a JSON object");
  for (const char* resize : {"currentlyAllocated", "mustKeep"}) {
    if (doc.HasMember(resize)) {
      return InvalidArgumentError(std::string(resize) +
                                  ": resize cases are not supported (a DRA claim's CPUs are "
                                  "never resized in place)");
    }
  }
  if (auto it = doc.FindMember("api");
      it != doc.MemberEnd() && it->value.IsString() &&
      std::string_view(it->value.GetString()).find("ForResize") != std::string_view::npos) {
    return InvalidArgumentError("api: resize cases are not supported");
  }
  Input in;
  if (!doc.HasMember("topology")) return InvalidArgumentError("topology: missing");
  ASSIGN_OR_RETURN(in.topology, ParseTopology(doc["topology"], topologies_file));
  if (!doc.HasMember("available")) return InvalidArgumentError("available: missing");
  ASSIGN_OR_RETURN(in.available, GetCpuList(doc["available"], "available"));
  if (!doc.HasMember("request")) return InvalidArgumentError("request: missing");
  ASSIGN_OR_RETURN(in.request, GetInt(doc["request"], "request", 0));
  if (auto it = doc.FindMember("reserved"); it != doc.MemberEnd()) {
    ASSIGN_OR_RETURN(in.reserved, GetCpuList(it->value, "reserved"));
  }
  if (auto it = doc.FindMember("sharedPool"); it != doc.MemberEnd()) {
    ASSIGN_OR_RETURN(in.shared_pool, GetCpuList(it->value, "sharedPool"));
  }
  if (auto it = doc.FindMember("numaAffinity"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsArray())
      return InvalidArgumentError("numaAffinity: must be an array of NUMA ids");
    for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i) {
      ASSIGN_OR_RETURN(int id, GetInt(it->value[i], "numaAffinity[" + std::to_string(i) + "]", 0));
      in.numa_affinity.push_back(id);
    }
  }
  std::vector<std::pair<std::string, std::string>> options;
  if (auto it = doc.FindMember("options"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsObject()) return InvalidArgumentError("options: must be an object");
    for (const auto& m : it->value.GetObject()) {
      const std::string name = m.name.GetString();
      if (m.value.IsString()) {
        options.emplace_back(name, m.value.GetString());
      } else if (m.value.IsBool()) {
        options.emplace_back(name, m.value.GetBool() ? "true" : "false");
      } else {
        return InvalidArgumentError("options." + name + ": must be a string or a boolean");
      }
    }
  }
  Result<PlacementPolicy> parsed = ParseKubeletOptions(options);
  if (!parsed.ok()) return InvalidArgumentError("options: " + parsed.status().message());
  in.options = *parsed;
  if (auto it = doc.FindMember("cpuGroupSize"); it != doc.MemberEnd()) {
    ASSIGN_OR_RETURN(in.options.numa_distribution_group, GetInt(it->value, "cpuGroupSize", 1));
  }
  if (auto it = doc.FindMember("containers"); it != doc.MemberEnd() && !it->value.IsNull()) {
    if (!it->value.IsArray() || it->value.Empty()) {
      return InvalidArgumentError("containers: must be a non-empty array of CPU counts");
    }
    int sum = 0;
    for (rapidjson::SizeType i = 0; i < it->value.Size(); ++i) {
      ASSIGN_OR_RETURN(int n, GetInt(it->value[i], "containers[" + std::to_string(i) + "]", 0));
      in.containers.push_back(n);
      sum += n;
    }
    if (sum != in.request) {
      return InvalidArgumentError("containers: counts sum to " + std::to_string(sum) +
                                  ", request is " + std::to_string(in.request));
    }
  }
  if (in.containers.empty()) in.containers.push_back(in.request);
  return in;
}

void WriteCpuArray(rapidjson::Writer<rapidjson::StringBuffer>& w, const CpuSet& cpus) {
  w.StartArray();
  for (int cpu : cpus) w.Int(cpu);
  w.EndArray();
}

std::string ErrorJson(const std::string& message) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("error");
  w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  w.EndObject();
  return buffer.GetString();
}

int Fail(dra::CommandIo io, const Status& status) {
  io.out << ErrorJson(status.message()) << "\n";
  const bool malformed =
      status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound;
  if (malformed) {
    io.err << "dracpu-dra-agent allocate: " << status.message() << "\n";
    return dra::kExitUsage;
  }
  return dra::kExitFailed;
}

constexpr const char* kUsage =
    "usage: dracpu-dra-agent allocate [--input FILE] [--topologies FILE]\n"
    "Reads one allocation request (JSON) from stdin or FILE and prints the chosen CPUs.\n";

}  // namespace

int RunAllocateCommand(const std::vector<std::string>& args, dra::CommandIo io) {
  std::optional<std::string> input_file, topologies_file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      io.out << kUsage;
      return dra::kExitOk;
    }
    if (a.rfind("--input=", 0) == 0) {
      input_file = a.substr(8);
      continue;
    }
    if (a.rfind("--topologies=", 0) == 0) {
      topologies_file = a.substr(13);
      continue;
    }
    if ((a == "--input" || a == "--topologies") && i + 1 < args.size()) {
      (a == "--input" ? input_file : topologies_file) = args[++i];
      continue;
    }
    io.err << kUsage;
    return Fail(io, InvalidArgumentError("unknown or incomplete argument \"" + a + "\""));
  }

  std::string text;
  if (input_file) {
    Result<std::string> read = ReadWholeFile(*input_file);
    if (!read.ok()) return Fail(io, InvalidArgumentError("--input: " + read.status().message()));
    text = *std::move(read);
  } else {
    text.assign(std::istreambuf_iterator<char>(io.in), std::istreambuf_iterator<char>());
  }
  rapidjson::Document doc;
  if (Status s = ParseJson(text, "input", &doc); !s.ok()) return Fail(io, s);
  Result<Input> input = ParseInput(doc, topologies_file);
  if (!input.ok()) return Fail(io, input.status());
  Result<TopologyIndex> index = TopologyIndex::Build(input->topology);
  if (!index.ok()) return Fail(io, InvalidArgumentError("topology: " + index.status().message()));

  CpuSet pool = input->available;
  if (input->shared_pool) pool &= *input->shared_pool;
  std::vector<CpuSet> per_container;
  CpuSet all;
  for (int count : input->containers) {
    AllocationRequest request;
    request.available = pool - all;
    request.count = count;
    request.reserved = input->reserved;
    request.numa_affinity = input->numa_affinity;
    Result<CpuSet> cpus = Allocate(*index, request, input->options);
    if (!cpus.ok()) {
      const Status& s = cpus.status();
      // Bad CPU ids or hints are input errors; everything else means "cannot be met".
      if (s.code() == StatusCode::kInvalidArgument) return Fail(io, s);
      io.out << ErrorJson(s.message()) << "\n";
      return dra::kExitFailed;
    }
    per_container.push_back(*cpus);
    all |= *cpus;
  }

  const PlacementMetrics m = ComputeMetrics(*index, all);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("cpus");
  WriteCpuArray(w, all);
  w.Key("metrics");
  w.StartObject();
  w.Key("numaSpan");
  w.Int(m.numa_span);
  w.Key("socketSpan");
  w.Int(m.socket_span);
  w.Key("l3Span");
  w.Int(m.l3_span);
  w.Key("coresTouched");
  w.Int(m.cores_touched);
  w.Key("partialCores");
  w.Int(m.partial_cores);
  w.EndObject();
  if (per_container.size() > 1) {
    w.Key("containers");
    w.StartArray();
    for (const CpuSet& c : per_container) WriteCpuArray(w, c);
    w.EndArray();
  }
  w.EndObject();
  io.out << buffer.GetString() << "\n";
  return dra::kExitOk;
}

}  // namespace dracpu::allocator
