// The invariants of a segment, checked on a snapshot (dracpu-shm verify, tests, and agents after
// recovery). Pure: no I/O.
#pragma once

#include <string>
#include <vector>

#include "shm-schema/segment.h"

namespace dracpu::shm {

struct VerifyResult {
  std::vector<std::string> violations;  // each one line; empty: all invariants hold
  std::vector<std::string> notes;       // checks skipped and why (e.g. topology not published)
};

// Checks: the snapshot is consistent and its generation even; every record's checksum and
// self-consistency; no duplicate claim uid or container id; every claim CpuAdmission::CheckGranted
// against the claims before it (no CPU in two claims; allocatable once the topology is
// published); shared pool = ComputeSharedPool(); every exclusive container's CPUs
// equal the union of its claims' CPUs; no container refers to a missing claim. Checks that need the
// topology or the shared pool are skipped (with a note) until their writer has published them.
VerifyResult VerifySnapshot(const Snapshot& snapshot);

}  // namespace dracpu::shm
