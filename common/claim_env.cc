#include "common/claim_env.h"

#include "common/log_escape.h"

namespace dracpu {
namespace {

bool IsAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

Status ValidateClaimUid(std::string_view uid) {
  if (uid.empty()) return InvalidArgumentError("claim uid is empty");
  if (uid.size() > 63) {
    return InvalidArgumentError("claim uid \"" + LogEscape(uid, 63) +
                                "\" is longer than 63 characters");
  }
  for (char c : uid) {
    if (!IsAlnum(c) && c != '-') {
      return InvalidArgumentError("claim uid \"" + LogEscape(uid) +
                                  "\" has a character other than letters, digits and '-'");
    }
  }
  if (!IsAlnum(uid.front()) || !IsAlnum(uid.back())) {
    return InvalidArgumentError("claim uid \"" + LogEscape(uid) +
                                "\" must start and end with a letter or digit");
  }
  return Status::Ok();
}

std::string ClaimEnvName(std::string_view uid) {
  return std::string(kClaimEnvPrefix) + std::string(uid);
}

std::string ClaimEnvEntry(std::string_view uid, const CpuSet& cpus) {
  return ClaimEnvName(uid) + "=" + cpus.ToListString();
}

Result<std::optional<ClaimEnv>> ParseClaimEnvEntry(std::string_view entry) {
  if (entry.substr(0, kClaimEnvPrefix.size()) != kClaimEnvPrefix) return std::optional<ClaimEnv>();
  const size_t eq = entry.find('=');
  const std::string_view name = entry.substr(0, eq);
  // The name is the pod author's: it reaches the runtime's error and our log escaped.
  const std::string shown = LogEscape(name, 128);
  if (eq == std::string_view::npos) {
    return InvalidArgumentError("environment variable " + shown + " has no value");
  }
  const std::string_view uid = name.substr(kClaimEnvPrefix.size());
  if (Status s = ValidateClaimUid(uid); !s.ok()) {
    return s.WithContext("environment variable " + shown);
  }
  const std::string_view value = entry.substr(eq + 1);
  if (value.find('\n') != std::string_view::npos) {
    return InvalidArgumentError("environment variable " + shown + " has a newline in its value");
  }
  ASSIGN_OR_RETURN(CpuSet cpus, CpuSet::ParseList(value, "environment variable " + shown));
  if (cpus.Empty()) {
    return InvalidArgumentError("environment variable " + shown + " names no CPUs");
  }
  return std::optional<ClaimEnv>(ClaimEnv{std::string(uid), cpus});
}

}  // namespace dracpu
