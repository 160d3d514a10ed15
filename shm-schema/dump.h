// Rendering a snapshot for operators (dracpu-shm dump): a human table or JSON.
#pragma once

#include <cstdint>
#include <string>

#include "shm-schema/segment.h"

namespace dracpu::shm {

// Liveness of each agent, as the dump shows it.
struct AgentLiveness {
  bool attached = false;        // the role ever attached (pid != 0)
  bool live = false;            // its process holds the role lock now
  double heartbeat_age_s = -1;  // seconds since its last heartbeat (CLOCK_BOOTTIME); -1: none
};

struct DumpContext {
  std::string path;
  AgentLiveness agents[kAgentRoles];
  uint64_t now_realtime_ns = 0;
};

// The context of `segment` now: its path, each agent's liveness, the time.
DumpContext ReadDumpContext(const Segment& segment);

std::string FormatText(const Snapshot& snapshot, const DumpContext& context);
std::string FormatJson(const Snapshot& snapshot, const DumpContext& context);

}  // namespace dracpu::shm
