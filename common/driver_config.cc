#include "common/driver_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace dracpu {
namespace {

template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

constexpr EnumName<CpuDeviceMode> kCpuDeviceModes[] = {{CpuDeviceMode::kGrouped, "grouped"},
                                                       {CpuDeviceMode::kIndividual, "individual"}};
constexpr EnumName<GroupBy> kGroupBys[] = {
    {GroupBy::kNumaNode, "numanode"}, {GroupBy::kSocket, "socket"}, {GroupBy::kMachine, "machine"}};
constexpr EnumName<SharedPoolUpdates> kSharedPoolUpdates[] = {
    {SharedPoolUpdates::kAuto, "auto"},
    {SharedPoolUpdates::kAlways, "always"},
    {SharedPoolUpdates::kNever, "never"}};
constexpr EnumName<CoreTypePreference> kCoreTypes[] = {
    {CoreTypePreference::kPerformance, "performance"},
    {CoreTypePreference::kEfficiency, "efficiency"},
    {CoreTypePreference::kAny, "any"}};

template <typename Enum, size_t N>
std::string_view NameOf(const EnumName<Enum> (&table)[N], Enum value) {
  for (const auto& e : table) {
    if (e.value == value) return e.name;
  }
  return "?";
}

template <typename Enum, size_t N>
Result<Enum> ParseEnum(const EnumName<Enum> (&table)[N], std::string_view text) {
  std::string allowed;
  for (const auto& e : table) {
    if (e.name == text) return e.value;
    if (!allowed.empty()) allowed += ", ";
    allowed += e.name;
  }
  return InvalidArgumentError("\"" + std::string(text) + "\" is not one of " + allowed);
}

// One key of the file: how to apply its scalar value to a config.
using Setter = std::function<Status(std::string_view value, DriverConfig& config)>;

Setter BoolSetter(bool DriverConfig::*field) {
  return [field](std::string_view v, DriverConfig& c) {
    ASSIGN_OR_RETURN(c.*field, ParseBool(v));
    return Status::Ok();
  };
}

Setter PolicyBoolSetter(bool PlacementPolicy::*field) {
  return [field](std::string_view v, DriverConfig& c) {
    ASSIGN_OR_RETURN(c.policy.*field, ParseBool(v));
    return Status::Ok();
  };
}

Setter StringSetter(std::string DriverConfig::*field) {
  return [field](std::string_view v, DriverConfig& c) {
    c.*field = std::string(v);
    return Status::Ok();
  };
}

const std::map<std::string, Setter, std::less<>>& Setters() {
  static const auto* setters = new std::map<std::string, Setter, std::less<>>{
      {"apiVersion",
       [](std::string_view v, DriverConfig&) {
         if (v != "v1alpha1") return InvalidArgumentError("only v1alpha1 is supported");
         return Status::Ok();
       }},
      {"cpuDeviceMode",
       [](std::string_view v, DriverConfig& c) {
         ASSIGN_OR_RETURN(c.cpu_device_mode, ParseCpuDeviceMode(v));
         return Status::Ok();
       }},
      {"groupBy",
       [](std::string_view v, DriverConfig& c) {
         ASSIGN_OR_RETURN(c.group_by, ParseGroupBy(v));
         return Status::Ok();
       }},
      {"reservedCPUs",
       [](std::string_view v, DriverConfig& c) {
         ASSIGN_OR_RETURN(c.reserved_cpus, CpuSet::ParseList(v, "reservedCPUs"));
         return Status::Ok();
       }},
      {"hostnameOverride", StringSetter(&DriverConfig::hostname_override)},
      {"kubeconfig", StringSetter(&DriverConfig::kubeconfig)},
      {"publishNodeAllocatableResourceMapping",
       BoolSetter(&DriverConfig::publish_node_allocatable_resource_mapping)},
      {"strictCPUReservation", BoolSetter(&DriverConfig::strict_cpu_reservation)},
      {"minSharedCPUs",
       [](std::string_view v, DriverConfig& c) {
         int n = 0;
         const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
         if (ec != std::errc() || ptr != v.data() + v.size() || n < 1 || n > CpuSet::kMaxCpus) {
           return InvalidArgumentError("must be a whole number from 1 to " +
                                       std::to_string(CpuSet::kMaxCpus));
         }
         c.min_shared_cpus = n;
         return Status::Ok();
       }},
      {"sharedPoolUpdates",
       [](std::string_view v, DriverConfig& c) {
         ASSIGN_OR_RETURN(c.shared_pool_updates, ParseSharedPoolUpdates(v));
         return Status::Ok();
       }},
      {"fullPCPUsOnly", PolicyBoolSetter(&PlacementPolicy::full_pcpus_only)},
      {"distributeCPUsAcrossNUMA", PolicyBoolSetter(&PlacementPolicy::distribute_cpus_across_numa)},
      {"alignBySocket", PolicyBoolSetter(&PlacementPolicy::align_by_socket)},
      {"preferAlignCPUsByUncoreCache",
       PolicyBoolSetter(&PlacementPolicy::prefer_align_cpus_by_uncorecache)},
      {"distributeCPUsAcrossCores",
       PolicyBoolSetter(&PlacementPolicy::distribute_cpus_across_cores)},
      {"coreType",
       [](std::string_view v, DriverConfig& c) {
         ASSIGN_OR_RETURN(c.policy.core_type, ParseCoreTypePreference(v));
         return Status::Ok();
       }},
      {"alignMemory", PolicyBoolSetter(&PlacementPolicy::align_memory)},
  };
  return *setters;
}

// Keys that exist in the reference driver's world but are not accepted in the file.
const std::map<std::string, std::string, std::less<>>& RefusedKeys() {
  static const auto* refused = new std::map<std::string, std::string, std::less<>>{
      {"bindAddress", "is a flag only (--bind-address)"},
      {"exposePCIeRoots", "is a flag only (--expose-pcie-roots)"},
      {"kubeletRootDir", "is a flag only (--kubelet-root-dir)"},
      {"sysfsOverlay", "is not supported by dracpu: point --sysfs-root at a prepared tree instead"},
  };
  return *refused;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The known key that differs from `key` only in case, or "".
std::string SameKeyOtherCase(std::string_view key) {
  const std::string lower = Lower(key);
  for (const auto& [known, setter] : Setters()) {
    if (Lower(known) == lower) return known;
  }
  return "";
}

struct Problem {
  int line;
  std::string text;
};

}  // namespace

std::string_view CpuDeviceModeName(CpuDeviceMode m) { return NameOf(kCpuDeviceModes, m); }
std::string_view GroupByName(GroupBy g) { return NameOf(kGroupBys, g); }
std::string_view SharedPoolUpdatesName(SharedPoolUpdates u) {
  return NameOf(kSharedPoolUpdates, u);
}
std::string_view CoreTypePreferenceName(CoreTypePreference p) { return NameOf(kCoreTypes, p); }
Result<CpuDeviceMode> ParseCpuDeviceMode(std::string_view t) {
  return ParseEnum(kCpuDeviceModes, t);
}
Result<GroupBy> ParseGroupBy(std::string_view t) { return ParseEnum(kGroupBys, t); }
Result<SharedPoolUpdates> ParseSharedPoolUpdates(std::string_view t) {
  return ParseEnum(kSharedPoolUpdates, t);
}
Result<CoreTypePreference> ParseCoreTypePreference(std::string_view t) {
  return ParseEnum(kCoreTypes, t);
}

Result<bool> ParseBool(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return InvalidArgumentError("\"" + std::string(text) + "\" is not true or false");
}

Status ParseDriverConfig(std::string_view yaml_text, std::string_view source,
                         DriverConfig& config) {
  // yaml-cpp reports errors by throwing; this function is its only caller in dracpu.
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string(source) + ":" + std::to_string(e.mark.line + 1) +
                                ": not valid YAML: " + e.msg);
  }
  if (root.IsNull()) return Status::Ok();  // an empty file keeps the defaults
  if (!root.IsMap()) {
    return InvalidArgumentError(std::string(source) + ": must be a flat mapping of keys to values");
  }
  DriverConfig updated = config;
  std::vector<Problem> problems;
  std::set<std::string> seen;
  for (const auto& entry : root) {
    const int line = entry.first.Mark().line + 1;
    if (!entry.first.IsScalar()) {
      problems.push_back({line, "keys must be plain strings"});
      continue;
    }
    const std::string key = entry.first.Scalar();
    auto problem = [&](const std::string& reason) {
      problems.push_back({line, "key \"" + key + "\": " + reason});
    };
    if (!seen.insert(key).second) {
      problem("duplicate key");
      continue;
    }
    if (auto refused = RefusedKeys().find(key); refused != RefusedKeys().end()) {
      problem(refused->second);
      continue;
    }
    auto setter = Setters().find(key);
    if (setter == Setters().end()) {
      const std::string other_case = SameKeyOtherCase(key);
      problem(other_case.empty()
                  ? "unknown key"
                  : "unknown key (keys are case-sensitive: did you mean \"" + other_case + "\"?)");
      continue;
    }
    if (!entry.second.IsScalar()) {
      problem(entry.second.IsNull() ? "has no value"
                                    : "must be a single value, not a list or mapping");
      continue;
    }
    const std::string value = entry.second.Scalar();
    if (Status s = setter->second(value, updated); !s.ok()) {
      problem("value \"" + value + "\": " + s.message());
    }
  }
  if (!problems.empty()) {
    std::ostringstream out;
    for (size_t i = 0; i < problems.size(); ++i) {
      if (i > 0) out << "\n";
      out << source << ":" << problems[i].line << ": " << problems[i].text;
    }
    return InvalidArgumentError(out.str());
  }
  config = updated;
  return Status::Ok();
}

std::string DriverConfigToYaml(const DriverConfig& c) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  auto quoted = [](const std::string& s) {
    std::string out = "\"";
    for (char ch : s) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    return out + "\"";
  };
  std::ostringstream out;
  out << "apiVersion: v1alpha1\n"
      << "cpuDeviceMode: " << CpuDeviceModeName(c.cpu_device_mode) << "\n"
      << "groupBy: " << GroupByName(c.group_by) << "\n"
      << "reservedCPUs: " << quoted(c.reserved_cpus.ToListString()) << "\n"
      << "hostnameOverride: " << quoted(c.hostname_override) << "\n"
      << "kubeconfig: " << quoted(c.kubeconfig) << "\n"
      << "publishNodeAllocatableResourceMapping: " << b(c.publish_node_allocatable_resource_mapping)
      << "\n"
      << "strictCPUReservation: " << b(c.strict_cpu_reservation) << "\n"
      << "minSharedCPUs: " << c.min_shared_cpus << "\n"
      << "sharedPoolUpdates: " << SharedPoolUpdatesName(c.shared_pool_updates) << "\n"
      << "fullPCPUsOnly: " << b(c.policy.full_pcpus_only) << "\n"
      << "distributeCPUsAcrossNUMA: " << b(c.policy.distribute_cpus_across_numa) << "\n"
      << "alignBySocket: " << b(c.policy.align_by_socket) << "\n"
      << "preferAlignCPUsByUncoreCache: " << b(c.policy.prefer_align_cpus_by_uncorecache) << "\n"
      << "distributeCPUsAcrossCores: " << b(c.policy.distribute_cpus_across_cores) << "\n"
      << "coreType: " << CoreTypePreferenceName(c.policy.core_type) << "\n"
      << "alignMemory: " << b(c.policy.align_memory) << "\n";
  return out.str();
}

}  // namespace dracpu
