// CDI spec files for prepared claims: one transient spec per claim in the CDI directory
// (/var/run/cdi), named, shaped and keyed as the Go reference driver's (reference-driver.md §2.5)
// so runtimes and users see the same thing after switching drivers:
//   file   dra.k8s.io-cpu_claim-<uid>.json
//   kind   dra.k8s.io/cpu, one device "claim-<uid>" whose only edit is the env entry
//          DRA_CPUSET_<uid>=<cpulist>
//   id     dra.k8s.io/cpu=claim-<uid>   (goes into Device.cdi_device_ids)
// cdiVersion is "0.5.0", the lowest that allows a device name starting with a digit (claim UIDs
// may), so runtimes with older CDI libraries accept it (protocols.md §8).
//
// The files are the dra-agent's durable record of prepared claims: after a crash the agent
// rebuilds shared memory from them (ParseCdiSpec is strict for that reason).
#pragma once

#include <string>
#include <string_view>

#include "common/claim_env.h"
#include "common/status.h"

namespace dracpu::dra {

inline constexpr std::string_view kCdiVendor = "dra.k8s.io";
inline constexpr std::string_view kCdiClass = "cpu";
inline constexpr std::string_view kCdiKind = "dra.k8s.io/cpu";
inline constexpr std::string_view kCdiVersion = "0.5.0";

std::string CdiSpecFileName(std::string_view claim_uid);  // "dra.k8s.io-cpu_claim-<uid>.json"
std::string CdiDeviceName(std::string_view claim_uid);    // "claim-<uid>"
std::string CdiDeviceId(std::string_view claim_uid);      // "dra.k8s.io/cpu=claim-<uid>"

// The JSON document for one claim. The uid must be valid (ValidateClaimUid).
std::string RenderCdiSpec(std::string_view claim_uid, const CpuSet& cpus);

// Reads back a spec written by RenderCdiSpec (or by the Go driver, cdiVersion 0.5.0-0.8.0).
// INVALID_ARGUMENT naming `source` when it is not one claim device of kind dra.k8s.io/cpu whose
// env has exactly one DRA_CPUSET_<uid> entry matching the device name.
Result<ClaimEnv> ParseCdiSpec(std::string_view json, std::string_view source);

}  // namespace dracpu::dra
