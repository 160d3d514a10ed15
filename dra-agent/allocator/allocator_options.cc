#include "dra-agent/allocator/allocator_options.h"

#include <optional>
#include <set>
#include <string_view>

namespace dracpu::allocator {
namespace {

// Go strconv.ParseBool.
std::optional<bool> ParseGoBool(std::string_view v) {
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") return true;
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") {
    return false;
  }
  return std::nullopt;
}

struct BoolOption {
  const char* name;
  bool AllocatorOptions::*field;
};

constexpr BoolOption kBoolOptions[] = {
    {"full-pcpus-only", &AllocatorOptions::full_pcpus_only},
    {"distribute-cpus-across-numa", &AllocatorOptions::distribute_cpus_across_numa},
    {"align-by-socket", &AllocatorOptions::align_by_socket},
    {"prefer-align-cpus-by-uncorecache", &AllocatorOptions::prefer_align_cpus_by_uncorecache},
    {"distribute-cpus-across-cores", &AllocatorOptions::distribute_cpus_across_cores},
    {"strict-cpu-reservation", &AllocatorOptions::strict_cpu_reservation},
};

}  // namespace

Result<AllocatorOptions> ParseAllocatorOptions(
    const std::vector<std::pair<std::string, std::string>>& options) {
  AllocatorOptions out;
  std::set<std::string> explicit_true;
  std::set<std::string> seen;
  for (const auto& [name, value] : options) {
    if (!seen.insert(name).second) {
      return InvalidArgumentError("option \"" + name + "\" is given more than once");
    }
    if (name == "core-type") {
      if (value == "performance") {
        out.core_type = CoreTypePreference::kPerformance;
      } else if (value == "efficiency") {
        out.core_type = CoreTypePreference::kEfficiency;
      } else if (value == "any") {
        out.core_type = CoreTypePreference::kAny;
      } else {
        return InvalidArgumentError("option \"core-type\": value \"" + value +
                                    "\" is not one of performance, efficiency, any");
      }
      continue;
    }
    const BoolOption* known = nullptr;
    for (const BoolOption& b : kBoolOptions) {
      if (name == b.name) known = &b;
    }
    if (known == nullptr) {
      return InvalidArgumentError(
          "unknown option \"" + name +
          "\" (known: full-pcpus-only, distribute-cpus-across-numa, align-by-socket, "
          "prefer-align-cpus-by-uncorecache, distribute-cpus-across-cores, "
          "strict-cpu-reservation, core-type)");
    }
    const std::optional<bool> parsed = ParseGoBool(value);
    if (!parsed) {
      return InvalidArgumentError("option \"" + name + "\": value \"" + value +
                                  "\" is not a boolean");
    }
    out.*(known->field) = *parsed;
    if (*parsed) explicit_true.insert(name);
  }

  // kubelet's NewStaticPolicyOptions/ValidateStaticPolicyOptions incompatibilities.
  constexpr std::pair<const char*, const char*> kIncompatible[] = {
      {"full-pcpus-only", "distribute-cpus-across-cores"},
      {"distribute-cpus-across-numa", "distribute-cpus-across-cores"},
      {"prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"},
      {"prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa"},
  };
  for (const auto& [a, b] : kIncompatible) {
    if (explicit_true.count(a) && explicit_true.count(b)) {
      return InvalidArgumentError(std::string("options \"") + a + "\" and \"" + b +
                                  "\" cannot be used together");
    }
  }
  return out;
}

}  // namespace dracpu::allocator
