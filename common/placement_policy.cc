#include "common/placement_policy.h"

#include <utility>

#include "common/log_escape.h"

namespace dracpu {
namespace {

enum class Kind { kBool, kCoreType };

struct Key {
  std::string_view name;
  std::vector<std::string_view> aliases;
  Kind kind;
  std::optional<bool> PolicyOverride::*flag;  // kBool only
};

const std::vector<Key>& Keys() {
  static const auto* keys = new std::vector<Key>{
      {"fullPCPUsOnly", {"full-pcpus-only"}, Kind::kBool, &PolicyOverride::full_pcpus_only},
      {"distributeCPUsAcrossNUMA",
       {"distribute-cpus-across-numa"},
       Kind::kBool,
       &PolicyOverride::distribute_cpus_across_numa},
      {"alignBySocket", {"align-by-socket"}, Kind::kBool, &PolicyOverride::align_by_socket},
      {"preferAlignCPUsByUncoreCache",
       {"alignByUncoreCache", "prefer-align-cpus-by-uncorecache"},
       Kind::kBool,
       &PolicyOverride::prefer_align_cpus_by_uncorecache},
      {"distributeCPUsAcrossCores",
       {"distribute-cpus-across-cores"},
       Kind::kBool,
       &PolicyOverride::distribute_cpus_across_cores},
      {"coreType", {"core-type"}, Kind::kCoreType, nullptr},
      {"alignMemory", {"align-memory"}, Kind::kBool, &PolicyOverride::align_memory},
  };
  return *keys;
}

const Key* Find(std::string_view name) {
  for (const Key& k : Keys()) {
    if (k.name == name) return &k;
    for (std::string_view a : k.aliases) {
      if (a == name) return &k;
    }
  }
  return nullptr;
}

constexpr std::pair<CoreTypePreference, std::string_view> kCoreTypes[] = {
    {CoreTypePreference::kPerformance, "performance"},
    {CoreTypePreference::kEfficiency, "efficiency"},
    {CoreTypePreference::kAny, "any"}};

}  // namespace

PlacementPolicy PolicyOverride::ApplyTo(PlacementPolicy base) const {
  if (full_pcpus_only) base.full_pcpus_only = *full_pcpus_only;
  if (distribute_cpus_across_numa) base.distribute_cpus_across_numa = *distribute_cpus_across_numa;
  if (align_by_socket) base.align_by_socket = *align_by_socket;
  if (prefer_align_cpus_by_uncorecache) {
    base.prefer_align_cpus_by_uncorecache = *prefer_align_cpus_by_uncorecache;
  }
  if (distribute_cpus_across_cores) {
    base.distribute_cpus_across_cores = *distribute_cpus_across_cores;
  }
  if (core_type) base.core_type = *core_type;
  if (align_memory) base.align_memory = *align_memory;
  return base;
}

bool PolicyParser::IsKey(std::string_view key) { return Find(key) != nullptr; }

std::vector<std::string_view> PolicyParser::CanonicalKeys() {
  std::vector<std::string_view> out;
  for (const Key& k : Keys()) out.push_back(k.name);
  return out;
}

Status PolicyParser::Set(std::string_view key, const PolicyValue& value) {
  const Key* k = Find(key);
  if (k == nullptr) {
    std::string known;
    for (std::string_view n : CanonicalKeys())
      known += (known.empty() ? "" : ", ") + std::string(n);
    return InvalidArgumentError("unknown placement key (known: " + known + ")");
  }
  const bool already =
      k->kind == Kind::kCoreType ? set_.core_type.has_value() : (set_.*(k->flag)).has_value();
  if (already) {
    return InvalidArgumentError("set twice (\"" + std::string(k->name) + "\" under two spellings)");
  }
  if (k->kind == Kind::kCoreType) {
    if (value.boolean) return InvalidArgumentError("must be performance, efficiency or any");
    ASSIGN_OR_RETURN(set_.core_type, ParseCoreTypePreference(value.text));
    return Status::Ok();
  }
  if (value.boolean) {
    set_.*(k->flag) = *value.boolean;
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(set_.*(k->flag), ParseBool(value.text));
  return Status::Ok();
}

Result<PolicyOverride> PolicyParser::Finish() const {
  constexpr std::pair<std::optional<bool> PolicyOverride::*, std::optional<bool> PolicyOverride::*>
      kIncompatible[] = {
          {&PolicyOverride::full_pcpus_only, &PolicyOverride::distribute_cpus_across_cores},
          {&PolicyOverride::distribute_cpus_across_numa,
           &PolicyOverride::distribute_cpus_across_cores},
          {&PolicyOverride::prefer_align_cpus_by_uncorecache,
           &PolicyOverride::distribute_cpus_across_cores},
          {&PolicyOverride::prefer_align_cpus_by_uncorecache,
           &PolicyOverride::distribute_cpus_across_numa},
      };
  auto name_of = [](std::optional<bool> PolicyOverride::*field) {
    for (const Key& k : Keys()) {
      if (k.flag == field) return std::string(k.name);
    }
    return std::string("?");
  };
  for (const auto& [a, b] : kIncompatible) {
    if (set_.*a == true && set_.*b == true) {
      return InvalidArgumentError("\"" + name_of(a) + "\" and \"" + name_of(b) +
                                  "\" cannot both be true (kubelet refuses the pair too)");
    }
  }
  return set_;
}

std::string_view CoreTypePreferenceName(CoreTypePreference pref) {
  for (const auto& [value, name] : kCoreTypes) {
    if (value == pref) return name;
  }
  return "?";
}

Result<CoreTypePreference> ParseCoreTypePreference(std::string_view text) {
  for (const auto& [value, name] : kCoreTypes) {
    if (name == text) return value;
  }
  return InvalidArgumentError(LogQuote(text) + " is not one of performance, efficiency, any");
}

Result<bool> ParseBool(std::string_view t) {
  if (t == "true" || t == "True" || t == "TRUE" || t == "t" || t == "T" || t == "1") return true;
  if (t == "false" || t == "False" || t == "FALSE" || t == "f" || t == "F" || t == "0") {
    return false;
  }
  return InvalidArgumentError(LogQuote(t) + " is not true or false");
}

}  // namespace dracpu
