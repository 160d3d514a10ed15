#include "shm-schema/verify.h"

#include <unordered_map>

#include "shm-schema/checksum.h"
#include "shm-schema/cpu_admission.h"

namespace dracpu::shm {
namespace {

bool Published(uint64_t updated_time_ns, uint64_t checksum) {
  return updated_time_ns != 0 || checksum != 0;
}

template <typename T>
void CheckRecord(const T& rec, const char* what, VerifyResult& out) {
  if (!Published(rec.updated_time_ns, rec.checksum)) return;
  if (RecordChecksum(rec) != rec.checksum) {
    out.violations.push_back(std::string(what) + ": checksum mismatch");
  }
}

}  // namespace

VerifyResult VerifySnapshot(const Snapshot& s) {
  VerifyResult out;
  if (!s.consistent) {
    out.violations.push_back("no consistent snapshot: generation " + std::to_string(s.generation) +
                             " stayed odd or changing (a writer died mid-write and nobody has "
                             "locked since); the records below may be torn");
  } else if (s.generation % 2 != 0) {
    out.violations.push_back("generation " + std::to_string(s.generation) + " is odd");
  }
  CheckRecord(s.config, "config summary", out);
  CheckRecord(s.topology, "topology summary", out);
  CheckRecord(s.shared_pool, "shared pool", out);

  const bool have_topology = Published(s.topology.updated_time_ns, s.topology.checksum);
  const bool have_pool = Published(s.shared_pool.updated_time_ns, s.shared_pool.checksum);
  if (!have_topology) out.notes.emplace_back("topology not published: allocatable checks skipped");
  if (!have_pool) out.notes.emplace_back("shared pool not published: pool checks skipped");

  // Claims.
  std::unordered_map<std::string_view, size_t> claim_by_uid;
  // Each claim is checked against the valid ones before it, by the rule that admitted it (so an
  // overlap is reported once, on the later claim).
  const CpuAdmission admission = CpuAdmission::FromRecords(s.topology, s.config);
  std::vector<ClaimEntry> earlier;
  for (size_t i = 0; i < s.claims.size(); ++i) {
    const ClaimEntry& c = s.claims[i];
    const std::string who = "claim " + std::string(c.Uid()) + " (" + std::string(c.Namespace()) +
                            "/" + std::string(c.Name()) + ")";
    const Status st = CheckClaimEntry(c);
    if (!st.ok()) {
      out.violations.push_back("claims[" + std::to_string(i) + "] " + who + ": " + st.message());
      continue;
    }
    if (!claim_by_uid.emplace(c.Uid(), i).second) {
      out.violations.push_back(who + ": duplicate uid");
      continue;
    }
    const Status granted = have_topology ? admission.CheckGranted(c.cpus, earlier)
                                         : CpuAdmission::CheckNotHeld(c.cpus, earlier);
    if (!granted.ok()) out.violations.push_back(who + ": " + granted.message());
    earlier.push_back(c);
  }
  if (have_topology && have_pool) {
    const CpuSet want = ComputeSharedPool(s.topology, s.config, s.claims);
    if (!(want == s.shared_pool.cpus)) {
      out.violations.push_back("shared pool is " + s.shared_pool.cpus.ToListString() +
                               " but allocatable minus claims is " + want.ToListString() +
                               " (extra: " + (s.shared_pool.cpus - want).ToListString() +
                               ", missing: " + (want - s.shared_pool.cpus).ToListString() + ")");
    }
  }

  // Containers.
  std::unordered_map<std::string_view, size_t> container_by_id;
  for (size_t i = 0; i < s.containers.size(); ++i) {
    const ContainerEntry& c = s.containers[i];
    const std::string who = "container " + std::string(c.Id()) + " (" +
                            std::string(c.PodNamespace()) + "/" + std::string(c.PodName()) + "/" +
                            std::string(c.Name()) + ")";
    const Status st = CheckContainerEntry(c);
    if (!st.ok()) {
      out.violations.push_back("containers[" + std::to_string(i) + "] " + who + ": " +
                               st.message());
      continue;
    }
    if (!container_by_id.emplace(c.Id(), i).second) {
      out.violations.push_back(who + ": duplicate id");
      continue;
    }
    CpuSet claimed;
    bool missing = false;
    for (uint32_t k = 0; k < c.claim_count; ++k) {
      const std::string_view uid = c.ClaimUid(static_cast<int>(k));
      auto it = claim_by_uid.find(uid);
      if (it == claim_by_uid.end()) {
        // Not a violation: the two tables have different writers, and the kubelet unprepares a
        // claim once the pod's containers have stopped, while the runtime removes them later (a
        // stopped container keeps its entry until RemoveContainer). Found by the soak.
        out.notes.push_back(who + ": refers to claim " + std::string(uid) +
                            ", no longer prepared (a stopped container not yet removed?)");
        missing = true;
      } else {
        claimed |= s.claims[it->second].cpus;
      }
    }
    if (c.Kind() == ContainerKind::kExclusive) {
      if (c.claim_count == 0) out.violations.push_back(who + ": exclusive without claims");
      if (!missing && !(claimed == c.cpus)) {
        out.violations.push_back(who + ": exclusive CPUs " + c.cpus.ToListString() +
                                 " differ from its claims' " + claimed.ToListString());
      }
    }
  }
  return out;
}

}  // namespace dracpu::shm
