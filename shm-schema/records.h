// Building and describing shared records from plain values, so the agents never fill raw
// fixed-width fields themselves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/status.h"
#include "shm-schema/layout.h"

namespace dracpu::shm {

// What the dra-agent records for a claim.
struct ClaimSpec {
  std::string uid;
  std::string namespace_;
  std::string name;
  ClaimState state = ClaimState::kReserved;
  uint32_t flags = 0;             // kClaim* bits
  uint64_t prepared_time_ns = 0;  // CLOCK_REALTIME ns; 0: now
  std::vector<std::string> request_names;
  CpuSet cpus;
  std::vector<int> mems;  // NUMA node ids
};

// What the nri-agent records for a container.
struct ContainerSpec {
  std::string id;
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string name;
  ContainerKind kind = ContainerKind::kShared;
  std::vector<std::string> claim_uids;
  CpuSet cpus;
  std::vector<int> mems;
  uint64_t updated_time_ns = 0;  // CLOCK_REALTIME ns; 0: now
};

// Validates and encodes a spec. INVALID_ARGUMENT names the field: empty key, a string longer
// than its field, too many requests/claims, a memory node out of range, an unknown enum value.
// The checksum is not set here (the writer sets it).
Result<ClaimEntry> EncodeClaim(const ClaimSpec& spec);
Result<ContainerEntry> EncodeContainer(const ContainerSpec& spec);
ClaimSpec DecodeClaim(const ClaimEntry& entry);
ContainerSpec DecodeContainer(const ContainerEntry& entry);

// Checks a stored record's own consistency (strings NUL-terminated, counts and enums in range,
// non-empty key, checksum). OK or DATA_LOSS naming the first problem.
Status CheckClaimEntry(const ClaimEntry& entry);
Status CheckContainerEntry(const ContainerEntry& entry);
// The same checks without the checksum (for a writer that has just computed it).
Status CheckClaimFields(const ClaimEntry& entry);
Status CheckContainerFields(const ContainerEntry& entry);

std::string_view ClaimStateName(ClaimState state);       // "prepared", "unknown(7)" is "?"
std::string_view ContainerKindName(ContainerKind kind);  // "exclusive", "shared"
std::string_view RoleName(Role role);                    // "dra-agent", "nri-agent", "reader"

std::vector<int> NodeMaskToVector(const NodeMask& mask);
std::string NodeMaskToList(const NodeMask& mask);  // "0-1,3"

// CLOCK_REALTIME and CLOCK_BOOTTIME in ns.
uint64_t RealtimeNs();
uint64_t BoottimeNs();

}  // namespace dracpu::shm
