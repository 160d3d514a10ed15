// The dra-agent running on this node, seen from outside by gatherinfo (as the reference's
// gatherinfo does for its driver): the process found under <root>/proc, and its effective
// configuration rebuilt from its command line, its environment ($NODE_NAME, $HOST_ROOT) and its
// --config file, read through /proc/<pid>/root (or /proc/<pid>/cwd for a relative path) so the
// file is the one in the agent's mount namespace.
//
// It reads another process: anything unreadable or malformed is tolerated and reported in
// `warnings`, and the config is rebuilt as far as it can be (flags without the file, or the
// defaults). Thread safety: pure functions of the filesystem.
#pragma once

#include <string>
#include <vector>

#include "common/driver_config.h"
#include "common/file_system.h"
#include "common/status.h"
#include "dra-agent/agent/agent_config.h"

namespace dracpu::dra {

struct RunningAgent {
  int pid = 0;
  AgentConfig config;
  // Its sysfsOverlay as a path under <root> that this process can read ("" = none).
  std::string overlay_path;
  std::vector<std::string> warnings;
};

// `root` holds proc/ ("/" on a host, $HOST_ROOT in a container that mounts the host there).
// The lowest-numbered process other than `self_pid` whose argv[0] is dracpu-dra-agent and that
// runs the agent (not a subcommand). NOT_FOUND when there is none.
Result<RunningAgent> FindRunningAgent(const FileSystem& root, int self_pid);

// The reference gatherinfo's driverConfig keys (kubeconfig, hostnameOverride, bindAddress,
// reservedCPUs, cpuDeviceMode, groupBy, exposePCIeRoots, sysfsOverlay, kubeletRootDir,
// publishNodeAllocatableResourceMapping) first, then ours (every other config key, nodeName,
// sysfsRoot, cdiRoot, shmPath), each with its effective value.
std::vector<ConfigField> EffectiveConfigFields(const AgentConfig& config);

}  // namespace dracpu::dra
