// The API server's validation of a ResourceClaim's status.devices (KEP-4817,
// DRAResourceClaimDeviceStatus), as upstream's validateDeviceStatus does it on a status update:
//  * each entry's driver (DNS subdomain), pool and device (DNS label) are valid names, and
//    (driver, pool, device, shareID) is one of the claim's status.allocation.devices.results
//    ("must be an allocated device in the claim"), at most once (Duplicate value);
//  * at most 8 conditions, each as metav1 ValidateConditions: type a qualified name and unique,
//    status True/False/Unknown, reason CamelCase-ish and non-empty, lastTransitionTime set,
//    observedGeneration >= 0, message <= 32768 bytes;
//  * data, when present, a JSON object of at most 10 KiB as serialized (Too long / "error
//    parsing data as JSON").
// networkData is not used by dracpu and is not checked. Field paths as upstream
// (status.devices[i].conditions[j].reason).
#pragma once

#include <rapidjson/document.h>

#include <vector>

#include "tests/sim/apiserver/field_errors.h"

namespace dracpu::sim {

inline constexpr size_t kMaxDeviceStatusConditions = 8;
inline constexpr size_t kMaxDeviceStatusDataBytes = 10 * 1024;

// `devices` is the new status.devices array; `allocation` the claim's status.allocation (null
// when unallocated: then no entry can match).
std::vector<FieldError> ValidateClaimDeviceStatus(const rapidjson::Value& devices,
                                                  const rapidjson::Value* allocation);

}  // namespace dracpu::sim
