// PlacementPolicy: how the allocator chooses a claim's CPUs. One type and one vocabulary for the
// three places a policy is written: the node-wide config file (docs/configuration.md), a claim's
// opaque `policy` parameters (docs/claims.md) and the allocator with its `allocate` command
// (docs/allocator.md). The same key means the same thing everywhere.
//
// Keys (canonical name, then the accepted aliases), with the kubelet CPU Manager option each one
// mirrors (../shared/spec/allocation.md):
//   fullPCPUsOnly                 full-pcpus-only                   whole cores only
//   distributeCPUsAcrossNUMA      distribute-cpus-across-numa       even split over NUMA nodes
//   alignBySocket                 align-by-socket                   widen NUMA hints to sockets
//   preferAlignCPUsByUncoreCache  alignByUncoreCache (the per-claim spelling of dracpu 0.1),
//                                 prefer-align-cpus-by-uncorecache  fewest L3 groups (default on)
//   distributeCPUsAcrossCores     distribute-cpus-across-cores      one thread per core first
//   coreType                      core-type                         performance|efficiency|any
//   alignMemory                   align-memory                      cpuset.mems = the claim's NUMA
//                                                                   nodes (nri-agent; ours)
// Booleans are JSON booleans or, as text, Go's strconv.ParseBool spellings (true/false, 1/0,
// t/f, TRUE/FALSE, True/False), which kubelet and Go flags accept.
//
// Incompatible pairs are refused as kubelet refuses them (full-pcpus-only, distribute-cpus-
// across-numa or prefer-align-cpus-by-uncorecache with distribute-cpus-across-cores; prefer-
// align-cpus-by-uncorecache with distribute-cpus-across-numa), but only when one source sets both
// to true explicitly: preferAlignCPUsByUncoreCache being on by default must not make the others
// unusable (the allocator honours the distribution first).
//
// Thread safety: plain values and pure functions; a PolicyParser is used by one thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dracpu {

enum class CoreTypePreference { kPerformance, kEfficiency, kAny };

struct PlacementPolicy {
  bool full_pcpus_only = false;
  bool distribute_cpus_across_numa = false;
  bool align_by_socket = false;
  bool prefer_align_cpus_by_uncorecache = true;
  bool distribute_cpus_across_cores = false;
  CoreTypePreference core_type = CoreTypePreference::kPerformance;
  bool align_memory = false;
  // kubelet's cpuGroupSize for distributeCPUsAcrossNUMA; 0 derives it as kubelet does (the core
  // size with fullPCPUsOnly, else 1). Not a key: only the allocate command sets it.
  int numa_distribution_group = 0;
};

// The keys one source set; the others keep the policy they are applied to.
struct PolicyOverride {
  std::optional<bool> full_pcpus_only;
  std::optional<bool> distribute_cpus_across_numa;
  std::optional<bool> align_by_socket;
  std::optional<bool> prefer_align_cpus_by_uncorecache;
  std::optional<bool> distribute_cpus_across_cores;
  std::optional<CoreTypePreference> core_type;
  std::optional<bool> align_memory;

  PlacementPolicy ApplyTo(PlacementPolicy base) const;
};

// A value as written: a JSON boolean, or text (a YAML scalar, a kubelet option, a JSON string).
struct PolicyValue {
  std::optional<bool> boolean;
  std::string text;
  static PolicyValue Bool(bool b) { return {b, {}}; }
  static PolicyValue Text(std::string_view t) { return {std::nullopt, std::string(t)}; }
};

// Collects the keys of one source (a config file, one claim config object, one option list).
class PolicyParser {
 public:
  // Whether `key` is a policy key or one of its aliases.
  static bool IsKey(std::string_view key);
  // The canonical names, in the order above (for messages and docs).
  static std::vector<std::string_view> CanonicalKeys();

  // Records one key. INVALID_ARGUMENT (message without the key name, which the caller adds with
  // its position) for an unknown key, a value of the wrong kind, or a key this source already
  // set, under any of its spellings.
  Status Set(std::string_view key, const PolicyValue& value);

  // What was set. INVALID_ARGUMENT naming both keys for an incompatible pair set to true.
  Result<PolicyOverride> Finish() const;

 private:
  PolicyOverride set_;
};

std::string_view CoreTypePreferenceName(CoreTypePreference pref);  // "performance" / ...
Result<CoreTypePreference> ParseCoreTypePreference(std::string_view text);

// Go's strconv.ParseBool spellings; INVALID_ARGUMENT "\"x\" is not true or false" otherwise.
Result<bool> ParseBool(std::string_view text);

}  // namespace dracpu
