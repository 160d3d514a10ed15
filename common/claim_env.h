// The contract between the dra-agent's CDI spec and the nri-agent's pinning: a container that
// holds a prepared claim carries the environment variable
//     DRA_CPUSET_<claimUID>=<cpulist>
// (the Go reference driver's name, kept so claims move between drivers unchanged). The
// DRA_CPUSET_ prefix is reserved: any variable with it must parse, or container creation fails.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/cpu_set.h"
#include "common/status.h"

namespace dracpu {

inline constexpr std::string_view kClaimEnvPrefix = "DRA_CPUSET_";

// Checks a Kubernetes object UID as used in env var, CDI device and file names: 1-63 characters,
// ASCII letters, digits and '-', starting and ending with a letter or digit.
Status ValidateClaimUid(std::string_view uid);

// "DRA_CPUSET_<uid>"; the uid must be valid.
std::string ClaimEnvName(std::string_view uid);
// "DRA_CPUSET_<uid>=<canonical cpulist>".
std::string ClaimEnvEntry(std::string_view uid, const CpuSet& cpus);

struct ClaimEnv {
  std::string claim_uid;
  CpuSet cpus;
};

// Parses one "NAME=VALUE" environment entry. Returns nullopt for variables without the reserved
// prefix; INVALID_ARGUMENT (naming the variable) for a reserved one with a bad uid, a missing
// '=', or a value that is not a non-empty canonical-or-not cpulist.
Result<std::optional<ClaimEnv>> ParseClaimEnvEntry(std::string_view entry);

}  // namespace dracpu
