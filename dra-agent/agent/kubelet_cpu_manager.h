// The kubelet's own CPU Manager, seen through its state file (reference issues #140 and #134):
// with `cpuManagerPolicy: static` the kubelet gives Guaranteed pods exclusive CPUs itself and
// rewrites every container's cpuset every reconcile period (10 s by default) through CRI
// UpdateContainerResources, which undoes the pinning dracpu's nri-agent applied; the two cannot
// share a node. The kubelet keeps its state in <kubelet root>/cpu_manager_state, JSON:
//   {"policyName":"static","defaultCpuSet":"0-3,8-11","entries":{"<pod uid>":{"<ctr>":"4-5"}},
//    "checksum":1234}
// (policy "none" writes {"policyName":"none","defaultCpuSet":"",...}). The dra-agent reads it at
// start (a warning), on every health poll (devices Unhealthy), for /readyz (503) and for
// gatherinfo, so the misconfiguration is said where an operator looks (docs/migrating.md,
// "The kubelet's CPU Manager").
// Thread safety: pure functions of the filesystem.
#pragma once

#include <string>

#include "common/cpu_set.h"
#include "common/file_system.h"
#include "common/status.h"

namespace dracpu::dra {

inline constexpr char kCpuManagerStateFile[] = "cpu_manager_state";

struct KubeletCpuManagerState {
  std::string path;        // the file read
  std::string policy;      // policyName
  CpuSet default_cpu_set;  // the kubelet's shared pool
  CpuSet exclusive_cpus;   // every entry's CPUs
  int exclusive_containers = 0;
};

// Parses the state file's text; INVALID_ARGUMENT naming `path` when it is not the kubelet's JSON.
Result<KubeletCpuManagerState> ParseKubeletCpuManagerState(std::string_view text,
                                                           const std::string& path);

// Reads <kubelet_root>/cpu_manager_state through `fs`; NOT_FOUND when there is none (the file is
// not visible, or the kubelet has no CPU Manager state).
Result<KubeletCpuManagerState> ReadKubeletCpuManagerState(const FileSystem& fs,
                                                          const std::string& kubelet_root);

// One sentence saying what conflicts with dracpu and what to do, or "" when nothing does (no
// state file, policy none, or a file that cannot be read: that is reported by the caller).
std::string KubeletCpuManagerConflict(const Result<KubeletCpuManagerState>& state);

}  // namespace dracpu::dra
