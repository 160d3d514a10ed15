#include "dra-agent/allocator/allocator_options.h"

namespace dracpu::allocator {

Result<PlacementPolicy> ParseKubeletOptions(
    const std::vector<std::pair<std::string, std::string>>& options) {
  PolicyParser parser;
  bool strict_seen = false;
  for (const auto& [name, value] : options) {
    if (name == "strict-cpu-reservation") {
      if (strict_seen) return InvalidArgumentError("option \"" + name + "\": set twice");
      strict_seen = true;
      Result<bool> parsed = ParseBool(value);
      if (!parsed.ok()) return parsed.status().WithContext("option \"" + name + "\"");
      continue;
    }
    if (Status s = parser.Set(name, PolicyValue::Text(value)); !s.ok()) {
      return s.WithContext("option \"" + name + "\"");
    }
  }
  ASSIGN_OR_RETURN(const PolicyOverride set, parser.Finish());
  return set.ApplyTo(PlacementPolicy());
}

}  // namespace dracpu::allocator
