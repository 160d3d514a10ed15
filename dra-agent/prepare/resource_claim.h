// What NodePrepareResources needs from a ResourceClaim (resource.k8s.io/v1 JSON, protocols.md
// §7.3), read strictly: the uid, whether it is allocated, the allocation results, and the
// opaque configs addressed to dra.cpu.
//
// Opaque parameters for dra.cpu (apiVersion v1alpha1), in status.allocation.devices.config[]:
//   {"apiVersion":"v1alpha1","cpuConfig":{"cpuset":"2-5"}}     exact CPUs (the reference's)
//   {"apiVersion":"v1alpha1","policy":{"fullPCPUsOnly":true,   per-claim placement (ours)
//        "distributeCPUsAcrossNUMA":false,"preferAlignCPUsByUncoreCache":true,
//        "coreType":"performance|efficiency|any","alignMemory":false}}
// `policy` takes every node-wide placement key under the same name (and its aliases, such as
// the old per-claim "alignByUncoreCache"): common/placement_policy.h, one parser for both.
// Both keys may appear in one object. A config applies to a result when its `requests` is empty
// or names the result's request (with or without "/subrequest"). Rules (as the reference):
// a cpuConfig from the DeviceClass (source FromClass) is refused; more than one cpuConfig or
// policy for one request is refused; unknown apiVersion, unknown keys and bad values are refused.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpu_set.h"
#include "common/placement_policy.h"
#include "common/status.h"

namespace dracpu::dra {

inline constexpr char kDriverNameForClaims[] = "dra.cpu";

struct AllocationResultView {
  std::string request;       // "req" or "req/sub"
  std::string base_request;  // "req"
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::string> share_id;
  std::optional<std::string> consumed_cpu;  // consumedCapacity["dra.cpu/cpu"], a quantity
};

struct OpaqueConfigView {
  std::string source;  // "FromClass" / "FromClaim"
  std::vector<std::string> requests;
  std::string driver;
  std::string parameters;  // the raw JSON object
};

struct ResourceClaimView {
  std::string uid;
  std::string namespace_name;
  std::string name;
  // metadata.annotations["resource.kubernetes.io/pod-claim-name"]: set on claims made from a
  // ResourceClaimTemplate (the pod's name for the claim).
  std::optional<std::string> pod_claim_name;
  bool allocated = false;
  std::vector<AllocationResultView> results;  // every driver's
  std::vector<OpaqueConfigView> configs;      // every driver's
};

// INVALID_ARGUMENT naming the JSON field when the document is not a ResourceClaim as expected.
Result<ResourceClaimView> ParseResourceClaim(std::string_view json);

// A whole, positive number of CPUs from a Kubernetes quantity: "4", "4000m", "4.0". Fractions
// ("1500m"), zero, negatives and other suffixes are INVALID_ARGUMENT saying so.
Result<int64_t> ParseWholeCpuQuantity(std::string_view quantity);

struct RequestConfig {
  std::optional<CpuSet> cpuset;
  PolicyOverride policy;  // unset keys keep the node-wide policy
};

// The dra.cpu config for one allocation result's request, merged from every applicable config.
Result<RequestConfig> ConfigForRequest(const ResourceClaimView& claim, const std::string& request);

}  // namespace dracpu::dra
