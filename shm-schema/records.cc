#include "shm-schema/records.h"

#include <time.h>

#include <cstdio>
#include <cstring>

#include "shm-schema/checksum.h"

namespace dracpu::shm {
namespace {

template <size_t N>
Status PutString(char (&field)[N], std::string_view value, std::string_view what, bool required) {
  if (required && value.empty()) return InvalidArgumentError(std::string(what) + " is empty");
  if (value.size() >= N) {
    return InvalidArgumentError(std::string(what) + " \"" + std::string(value.substr(0, 64)) +
                                "...\" is " + std::to_string(value.size()) +
                                " bytes; the field holds at most " + std::to_string(N - 1));
  }
  if (value.find('\0') != std::string_view::npos) {
    return InvalidArgumentError(std::string(what) + " contains a NUL byte");
  }
  std::memset(field, 0, N);
  std::memcpy(field, value.data(), value.size());
  return Status::Ok();
}

template <size_t N>
bool Terminated(const char (&field)[N]) {
  return std::memchr(field, '\0', N) != nullptr;
}

Result<NodeMask> EncodeNodes(const std::vector<int>& nodes) {
  NodeMask mask{};
  for (int n : nodes) {
    if (n < 0 || n >= kMaxMemoryNodes) {
      return InvalidArgumentError("memory node " + std::to_string(n) + " is outside [0, " +
                                  std::to_string(kMaxMemoryNodes) + ")");
    }
    mask.Set(n);
  }
  return mask;
}

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t RealtimeNs() { return ClockNs(CLOCK_REALTIME); }
uint64_t BoottimeNs() { return ClockNs(CLOCK_BOOTTIME); }

Result<ClaimEntry> EncodeClaim(const ClaimSpec& spec) {
  ClaimEntry e{};
  RETURN_IF_ERROR(PutString(e.uid, spec.uid, "claim uid", true));
  RETURN_IF_ERROR(
      PutString(e.namespace_, spec.namespace_, "claim " + spec.uid + " namespace", false));
  RETURN_IF_ERROR(PutString(e.name, spec.name, "claim " + spec.uid + " name", false));
  if (spec.state != ClaimState::kReserved && spec.state != ClaimState::kPrepared &&
      spec.state != ClaimState::kReleasing) {
    return InvalidArgumentError("claim " + spec.uid + ": unknown state " +
                                std::to_string(static_cast<uint32_t>(spec.state)));
  }
  e.state = static_cast<uint32_t>(spec.state);
  e.flags = spec.flags;
  e.prepared_time_ns = spec.prepared_time_ns != 0 ? spec.prepared_time_ns : RealtimeNs();
  if (spec.request_names.size() > kMaxRequestsPerClaim) {
    return InvalidArgumentError(
        "claim " + spec.uid + " has " + std::to_string(spec.request_names.size()) +
        " request names; at most " + std::to_string(kMaxRequestsPerClaim) + " are stored");
  }
  e.request_count = static_cast<uint32_t>(spec.request_names.size());
  for (size_t i = 0; i < spec.request_names.size(); ++i) {
    RETURN_IF_ERROR(PutString(e.request_names[i], spec.request_names[i],
                              "claim " + spec.uid + " request name", true));
  }
  e.cpus = spec.cpus;
  ASSIGN_OR_RETURN(e.mems, EncodeNodes(spec.mems));
  return e;
}

Result<ContainerEntry> EncodeContainer(const ContainerSpec& spec) {
  ContainerEntry e{};
  RETURN_IF_ERROR(PutString(e.container_id, spec.id, "container id", true));
  const std::string what = "container " + spec.id;
  RETURN_IF_ERROR(PutString(e.pod_uid, spec.pod_uid, what + " pod uid", false));
  RETURN_IF_ERROR(PutString(e.pod_namespace, spec.pod_namespace, what + " pod namespace", false));
  RETURN_IF_ERROR(PutString(e.pod_name, spec.pod_name, what + " pod name", false));
  RETURN_IF_ERROR(PutString(e.container_name, spec.name, what + " name", false));
  if (spec.kind != ContainerKind::kExclusive && spec.kind != ContainerKind::kShared) {
    return InvalidArgumentError(what + ": unknown kind " +
                                std::to_string(static_cast<uint32_t>(spec.kind)));
  }
  e.kind = static_cast<uint32_t>(spec.kind);
  if (spec.claim_uids.size() > kMaxClaimsPerContainer) {
    return InvalidArgumentError(what + " refers to " + std::to_string(spec.claim_uids.size()) +
                                " claims; at most " + std::to_string(kMaxClaimsPerContainer) +
                                " are stored");
  }
  e.claim_count = static_cast<uint32_t>(spec.claim_uids.size());
  for (size_t i = 0; i < spec.claim_uids.size(); ++i) {
    RETURN_IF_ERROR(PutString(e.claim_uids[i], spec.claim_uids[i], what + " claim uid", true));
  }
  e.updated_time_ns = spec.updated_time_ns != 0 ? spec.updated_time_ns : RealtimeNs();
  e.cpus = spec.cpus;
  ASSIGN_OR_RETURN(e.mems, EncodeNodes(spec.mems));
  return e;
}

ClaimSpec DecodeClaim(const ClaimEntry& e) {
  ClaimSpec s;
  s.uid = e.Uid();
  s.namespace_ = e.Namespace();
  s.name = e.Name();
  s.state = e.State();
  s.flags = e.flags;
  s.prepared_time_ns = e.prepared_time_ns;
  for (uint32_t i = 0; i < e.request_count && i < kMaxRequestsPerClaim; ++i) {
    s.request_names.emplace_back(e.RequestName(static_cast<int>(i)));
  }
  s.cpus = e.cpus;
  s.mems = NodeMaskToVector(e.mems);
  return s;
}

ContainerSpec DecodeContainer(const ContainerEntry& e) {
  ContainerSpec s;
  s.id = e.Id();
  s.pod_uid = e.PodUid();
  s.pod_namespace = e.PodNamespace();
  s.pod_name = e.PodName();
  s.name = e.Name();
  s.kind = e.Kind();
  for (uint32_t i = 0; i < e.claim_count && i < kMaxClaimsPerContainer; ++i) {
    s.claim_uids.emplace_back(e.ClaimUid(static_cast<int>(i)));
  }
  s.cpus = e.cpus;
  s.mems = NodeMaskToVector(e.mems);
  s.updated_time_ns = e.updated_time_ns;
  return s;
}

Status CheckClaimEntry(const ClaimEntry& e) {
  const uint64_t sum = RecordChecksum(e);
  if (sum != e.checksum) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "checksum mismatch (stored 0x%016llx, computed 0x%016llx)",
                  static_cast<unsigned long long>(e.checksum),
                  static_cast<unsigned long long>(sum));
    return DataLossError(buf);
  }
  return CheckClaimFields(e);
}

Status CheckClaimFields(const ClaimEntry& e) {
  if (!Terminated(e.uid) || !Terminated(e.namespace_) || !Terminated(e.name)) {
    return DataLossError("a string field is not NUL-terminated");
  }
  if (e.uid[0] == '\0') return DataLossError("empty uid");
  if (e.state < 1 || e.state > 3) return DataLossError("unknown state " + std::to_string(e.state));
  if (e.request_count > kMaxRequestsPerClaim) {
    return DataLossError("request_count " + std::to_string(e.request_count) + " over " +
                         std::to_string(kMaxRequestsPerClaim));
  }
  for (const auto& r : e.request_names) {
    if (!Terminated(r)) return DataLossError("a request name is not NUL-terminated");
  }
  return Status::Ok();
}

Status CheckContainerEntry(const ContainerEntry& e) {
  const uint64_t sum = RecordChecksum(e);
  if (sum != e.checksum) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "checksum mismatch (stored 0x%016llx, computed 0x%016llx)",
                  static_cast<unsigned long long>(e.checksum),
                  static_cast<unsigned long long>(sum));
    return DataLossError(buf);
  }
  return CheckContainerFields(e);
}

Status CheckContainerFields(const ContainerEntry& e) {
  if (!Terminated(e.container_id) || !Terminated(e.pod_uid) || !Terminated(e.pod_namespace) ||
      !Terminated(e.pod_name) || !Terminated(e.container_name)) {
    return DataLossError("a string field is not NUL-terminated");
  }
  if (e.container_id[0] == '\0') return DataLossError("empty container id");
  if (e.kind < 1 || e.kind > 2) return DataLossError("unknown kind " + std::to_string(e.kind));
  if (e.claim_count > kMaxClaimsPerContainer) {
    return DataLossError("claim_count " + std::to_string(e.claim_count) + " over " +
                         std::to_string(kMaxClaimsPerContainer));
  }
  for (const auto& u : e.claim_uids) {
    if (!Terminated(u)) return DataLossError("a claim uid is not NUL-terminated");
  }
  return Status::Ok();
}

std::string_view ClaimStateName(ClaimState state) {
  switch (state) {
    case ClaimState::kReserved:
      return "reserved";
    case ClaimState::kPrepared:
      return "prepared";
    case ClaimState::kReleasing:
      return "releasing";
  }
  return "?";
}

std::string_view ContainerKindName(ContainerKind kind) {
  switch (kind) {
    case ContainerKind::kExclusive:
      return "exclusive";
    case ContainerKind::kShared:
      return "shared";
  }
  return "?";
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kDraAgent:
      return "dra-agent";
    case Role::kNriAgent:
      return "nri-agent";
    case Role::kReader:
      return "reader";
  }
  return "?";
}

std::vector<int> NodeMaskToVector(const NodeMask& mask) {
  std::vector<int> out;
  for (int n = 0; n < kMaxMemoryNodes; ++n) {
    if (mask.Contains(n)) out.push_back(n);
  }
  return out;
}

std::string NodeMaskToList(const NodeMask& mask) {
  CpuSet as_set;  // same list syntax; node ids < kMaxMemoryNodes < CpuSet::kMaxCpus
  for (int n : NodeMaskToVector(mask)) as_set.Set(n);
  return as_set.ToListString();
}

}  // namespace dracpu::shm
