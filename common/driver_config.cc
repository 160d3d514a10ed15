#include "common/driver_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "common/log_escape.h"
#include "common/yaml_tree.h"

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
  return InvalidArgumentError(LogQuote(text) + " is not one of " + allowed);
}

// One key of the file: how to apply its scalar value to a config.
using Setter = std::function<Status(std::string_view value, DriverConfig& config)>;

Setter BoolSetter(bool DriverConfig::*field) {
  return [field](std::string_view v, DriverConfig& c) {
    ASSIGN_OR_RETURN(c.*field, ParseBool(v));
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
      {"sysfsOverlay", StringSetter(&DriverConfig::sysfs_overlay)},
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
  };
  return *setters;
}

// Keys that exist in the reference driver's world but are not accepted in the file.
const std::map<std::string, std::string, std::less<>>& RefusedKeys() {
  static const auto* refused = new std::map<std::string, std::string, std::less<>>{
      {"bindAddress", "is a flag only (--bind-address)"},
      {"exposePCIeRoots", "is a flag only (--expose-pcie-roots)"},
      {"kubeletRootDir", "is a flag only (--kubelet-root-dir)"},
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
  for (std::string_view known : PolicyParser::CanonicalKeys()) {
    if (Lower(known) == lower) return std::string(known);
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
Result<CpuDeviceMode> ParseCpuDeviceMode(std::string_view t) {
  return ParseEnum(kCpuDeviceModes, t);
}
Result<GroupBy> ParseGroupBy(std::string_view t) { return ParseEnum(kGroupBys, t); }
Result<SharedPoolUpdates> ParseSharedPoolUpdates(std::string_view t) {
  return ParseEnum(kSharedPoolUpdates, t);
}

Status ParseDriverConfig(std::string_view yaml_text, std::string_view source,
                         DriverConfig& config) {
  Result<YamlNode> root = ParseYaml(yaml_text);
  if (!root.ok()) {
    return InvalidArgumentError(std::string(source) +
                                ": not valid YAML: " + root.status().message());
  }
  if (root->kind == YamlNode::Kind::kNull) return Status::Ok();  // an empty file keeps defaults
  if (root->kind != YamlNode::Kind::kMap) {
    return InvalidArgumentError(std::string(source) + ": must be a flat mapping of keys to values");
  }
  DriverConfig updated = config;
  std::vector<Problem> problems;
  std::set<std::string> seen;
  PolicyParser policy;
  for (const auto& entry : root->map) {
    // Not a structured binding: clang 14 (make fuzz) cannot capture one in the lambda below.
    const std::string& key = entry.key;
    const YamlNode& value = entry.value;
    const int line = value.line;
    auto problem = [&](const std::string& reason) {
      problems.push_back({line, "key " + LogQuote(key) + ": " + reason});
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
    const bool policy_key = PolicyParser::IsKey(key);
    if (setter == Setters().end() && !policy_key) {
      const std::string other_case = SameKeyOtherCase(key);
      problem(other_case.empty()
                  ? "unknown key"
                  : "unknown key (keys are case-sensitive: did you mean \"" + other_case + "\"?)");
      continue;
    }
    if (value.kind != YamlNode::Kind::kScalar) {
      problem(value.kind == YamlNode::Kind::kNull
                  ? "has no value"
                  : "must be a single value, not a list or mapping");
      continue;
    }
    const Status s = policy_key ? policy.Set(key, PolicyValue::Text(value.scalar))
                                : setter->second(value.scalar, updated);
    if (!s.ok()) problem("value " + LogQuote(value.scalar) + ": " + s.message());
  }
  if (Result<PolicyOverride> o = policy.Finish(); !o.ok()) {
    problems.push_back({root->line, o.status().message()});
  } else {
    updated.policy = o->ApplyTo(updated.policy);
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

std::vector<ConfigField> DriverConfigFields(const DriverConfig& c) {
  auto text = [](std::string_view v) { return ConfigValue(std::string(v)); };
  return {
      {"cpuDeviceMode", text(CpuDeviceModeName(c.cpu_device_mode))},
      {"groupBy", text(GroupByName(c.group_by))},
      {"reservedCPUs", c.reserved_cpus.ToListString()},
      {"hostnameOverride", c.hostname_override},
      {"kubeconfig", c.kubeconfig},
      {"sysfsOverlay", c.sysfs_overlay},
      {"publishNodeAllocatableResourceMapping", c.publish_node_allocatable_resource_mapping},
      {"strictCPUReservation", c.strict_cpu_reservation},
      {"minSharedCPUs", c.min_shared_cpus},
      {"sharedPoolUpdates", text(SharedPoolUpdatesName(c.shared_pool_updates))},
      {"fullPCPUsOnly", c.policy.full_pcpus_only},
      {"distributeCPUsAcrossNUMA", c.policy.distribute_cpus_across_numa},
      {"alignBySocket", c.policy.align_by_socket},
      {"preferAlignCPUsByUncoreCache", c.policy.prefer_align_cpus_by_uncorecache},
      {"distributeCPUsAcrossCores", c.policy.distribute_cpus_across_cores},
      {"coreType", text(CoreTypePreferenceName(c.policy.core_type))},
      {"alignMemory", c.policy.align_memory},
  };
}

std::string DriverConfigToYaml(const DriverConfig& c) {
  std::ostringstream out;
  out << "apiVersion: v1alpha1\n";
  for (const ConfigField& f : DriverConfigFields(c)) {
    out << f.key << ": ";
    if (const auto* s = std::get_if<std::string>(&f.value)) {
      // Names of values (grouped, socket, auto) plain; everything else quoted.
      const bool plain = !s->empty() && std::all_of(s->begin(), s->end(), [](unsigned char ch) {
        return std::isalpha(ch) != 0;
      });
      if (plain) {
        out << *s << "\n";
        continue;
      }
      out << '"';
      for (char ch : *s) {
        if (ch == '"' || ch == '\\') out << '\\';
        out << ch;
      }
      out << '"';
    } else if (const auto* b = std::get_if<bool>(&f.value)) {
      out << (*b ? "true" : "false");
    } else {
      out << std::get<int>(f.value);
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace dracpu
