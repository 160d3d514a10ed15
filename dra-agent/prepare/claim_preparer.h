// ClaimPreparer: the dra-agent's domain interface for the kubelet's Prepare/Unprepare calls,
// free of gRPC types (the kubelet/ adapters convert the v1 and v1beta1 messages to these).
//
// Contract (what the kubelet expects, protocols.md §6):
//  * Every claim of the request gets an entry in the result, keyed by claim uid.
//  * A per-claim failure is a non-empty `error`; the other claims are unaffected.
//  * Both calls are idempotent: preparing a prepared claim returns the same devices; unpreparing
//    an unknown claim succeeds.
//  * Implementations are called concurrently from several threads (one kubelet call each);
//    they serialize per claim themselves.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dracpu::dra {

struct ClaimRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

struct PreparedDevice {
  std::vector<std::string> request_names;  // base request names (before any '/')
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_device_ids;
  std::optional<std::string> share_id;  // consumable-capacity share (v1 only)

  friend bool operator==(const PreparedDevice&, const PreparedDevice&) = default;
};

struct ClaimPrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;  // non-empty: this claim failed

  friend bool operator==(const ClaimPrepareResult&, const ClaimPrepareResult&) = default;
};

class ClaimPreparer {
 public:
  virtual ~ClaimPreparer() = default;
  virtual std::map<std::string, ClaimPrepareResult> Prepare(
      const std::vector<ClaimRef>& claims) = 0;
  // uid -> error ("" on success).
  virtual std::map<std::string, std::string> Unprepare(const std::vector<ClaimRef>& claims) = 0;
};

}  // namespace dracpu::dra
