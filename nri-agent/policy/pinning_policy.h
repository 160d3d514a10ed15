// PinningPolicy: the nri-agent's CPU pinning and shared-pool policy, the PluginHandler the NRI
// adapter calls. Pure domain code over the shared-memory segment (role kNriAgent); no protobuf,
// no logging (the agent's LoggingHandler logs each request). The claim lifetime it takes part in
// is written once, in shm-schema/segment.h; the rules are in docs/nri-agent.md.
//
//  * CreateContainer: every DRA_CPUSET_<uid>=<cpulist> env entry is parsed strictly
//    (ParseClaimEnvEntry). A malformed entry, a claim absent from the claims table or not
//    kPrepared, or CPUs that differ from the claim's fail the creation (INVALID_ARGUMENT,
//    NOT_FOUND / FAILED_PRECONDITION, PERMISSION_DENIED). A claim already bound to another
//    container (another pod uid or container name) fails it too (ALREADY_EXISTS); the same
//    container restarting (same pod uid and container name, new id) is allowed. An exclusive
//    container gets the union of its claims' CPUs, and cpuset.mems = the union of its claims'
//    memory nodes when any of its claims carries kClaimAlignMemory. Every other container gets
//    the shared pool (shm::ComputeSharedPool). The reply also carries updates for the running
//    shared containers whose cpuset differs from the pool (the shrink when a claim's container
//    first starts). An empty pool refuses a shared container, and an exclusive one while running
//    shared containers exist (RESOURCE_EXHAUSTED).
//  * UpdateContainer: when the requested cpuset.cpus differs from ours, answers an update that
//    re-asserts ours (merged by the runtime into its pending update). Ours, for a running shared
//    container, is the current pool (recorded), whatever older pool it last got.
//  * StopContainer keeps the entry (marked stopped; never updated again); RemoveContainer
//    removes it.
//  * Synchronize: rebuilds the table from the runtime's containers (a container whose claims do
//    not verify is re-pinned to the shared pool), removes table entries the runtime no longer
//    has, and answers updates for every container whose cpuset differs from its placement. The
//    claims table is never written by this role, so a prepared claim with no container survives.
//  * The shared pool is every allocatable CPU minus every prepared claim's. Its changes reach
//    running shared containers in replies: CreateContainer of a claim's container shrinks
//    those on the claim's CPUs; every CreateContainer, UpdateContainer and StopContainer reply
//    widens those that lack CPUs of the pool (after an Unprepare). A prepared claim whose
//    container does not run takes nothing from running containers (the lazy shrink), so a
//    Prepare followed by its Unprepare sends nothing. Each shared container gets at most one
//    update per pool change (the containers table records what was sent).
//  * Release (widen) without an event: PendingPoolUpdates() gives the same updates; the agent
//    pushes them with UpdateContainers when UnsolicitedUpdatesAllowed(), says so with
//    UpdatesSent() and reports the outcome with UpdatesApplied(). While such a call is in flight
//    a reply's shrink also covers the CPUs it may still apply, and a container moved by a reply
//    meanwhile is pushed again once it is answered (a claim's CPUs are shared for at most that
//    round trip, whatever order the runtime applies the two in).
//
// Without a segment (the dra-agent has not created it yet): shared containers get the fallback
// pool (PolicyOptions::fallback_pool minus every CPU any known container's DRA_CPUSET env names);
// exclusive containers are refused with FAILED_PRECONDITION (their claims cannot be verified).
//
// Thread safety: none; every call on the agent's event loop thread. The Segment may be read by
// other threads meanwhile (the agent's change watcher).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/claim_env.h"
#include "common/cpu_set.h"
#include "common/driver_config.h"
#include "common/status.h"
#include "nri-agent/nri/types.h"
#include "nri-agent/policy/cpu_set_ref.h"
#include "shm-schema/segment.h"

namespace dracpu::policy {

struct PolicyOptions {
  SharedPoolUpdates shared_pool_updates = SharedPoolUpdates::kAuto;
  // The shared pool while no segment is attached: the node's allocatable CPUs as the agent sees
  // them in sysfs (online minus reserved under strictCPUReservation).
  CpuSet fallback_pool;
  // Where the shared containers a reply moves (shrink or widening) are recorded. Off: in the
  // reply's own transaction, before the reply is returned. On: after the reply, by
  // RecordAfterReply() (the agent posts it once the reply is on the wire) or first thing in the
  // policy's next call; hundreds of record writes leave the container-start path, and so does
  // the wake of the segment's waiters for the reply's commit (WakeWaiters::kDeferred: the
  // nri-agent's own watcher, mostly, whose wake cost the reply ~35 us). Either way
  // the container being created (an exclusive one's claim binding included) and the pool are
  // recorded before the reply, and the policy's own view moves at once. A crash in between
  // leaves those records one pool change behind; the next Synchronize rebuilds them from the
  // runtime's cpusets.
  bool record_moves_after_reply = false;
};

// Whether a runtime is known to survive plugin-initiated UpdateContainers (protocols.md §4.3,
// reference-driver.md §2.7: containerd deadlocks with NRI before containerd/nri#301, which is
// in NRI v0.12.1). True when `nri_version` parses as v0.12.1 or later, for any runtime name.
bool RuntimeSafeForUnsolicitedUpdates(const nri::RuntimeInfo& runtime);
// "v0.12.1" / "0.12.1" / "v0.12.1-rc.1" -> {0, 12, 1}; nullopt when it does not parse.
std::optional<std::vector<int>> ParseNriVersion(const std::string& version);

// A container as the policy tracks it. The fields a scan of every container reads come first,
// in the cache line after the map node's key: on the container-start path that scan runs over
// hundreds of entries, cold.
struct TrackedContainer {
  shm::ContainerKind kind = shm::ContainerKind::kShared;
  bool stopped = false;
  // cpuset.cpus we placed (and the runtime applied); the shared containers given one pool
  // share its set.
  CpuSetRef cpus;
  std::string id;
  std::string sandbox_id;
  std::string pod_uid;
  std::string pod_namespace;
  std::string pod_name;
  std::string name;
  std::vector<std::string> claim_uids;  // exclusive only
  std::vector<int> mems;                // cpuset.mems we placed; empty: not set
  friend bool operator==(const TrackedContainer&, const TrackedContainer&) = default;
};

class PinningPolicy : public nri::PluginHandler {
 public:
  // `segment` (role kNriAgent) may be null: see the file comment. Not owned; must outlive the
  // policy or be replaced with AttachSegment.
  PinningPolicy(shm::Segment* segment, PolicyOptions options);
  // Not copyable: exclusive_ points into containers_.
  PinningPolicy(const PinningPolicy&) = delete;
  PinningPolicy& operator=(const PinningPolicy&) = delete;

  // Switches to `segment` (null: detach). The runtime's next Synchronize reconciles with it;
  // the agent reconnects for that.
  void AttachSegment(shm::Segment* segment);
  shm::Segment* segment() const { return segment_; }

  // --- nri::PluginHandler
  Result<nri::EventMask> Configure(const nri::RuntimeInfo& runtime) override;
  Result<std::vector<nri::CpusetUpdate>> Synchronize(
      const std::vector<nri::Pod>& pods, const std::vector<nri::Container>& containers) override;
  Result<nri::CreateContainerResult> CreateContainer(const nri::Pod& pod,
                                                     const nri::Container& container) override;
  Result<std::vector<nri::CpusetUpdate>> UpdateContainer(const nri::Pod& pod,
                                                         const nri::Container& container,
                                                         const nri::Cpuset& requested) override;
  Result<std::vector<nri::CpusetUpdate>> StopContainer(const nri::Pod& pod,
                                                       const nri::Container& container) override;
  Status RemoveContainer(const nri::Pod& pod, const nri::Container& container) override;
  void Disconnected(const Status& reason) override;

  // --- widening (released claims)
  // The current shared pool (from the segment, or the fallback pool without one).
  Result<CpuSet> SharedPool();
  // Writes the current pool into the segment's shared-pool record when it changed (not when it
  // is empty or no segment is attached).
  Status RecordSharedPool();
  // Updates moving to the current pool every running shared container that lacks one of its
  // CPUs or has a CPU outside the pool and the lazy CPUs (prepared claims whose container does
  // not run); ignore_failure set: a container exiting meanwhile must not fail the batch. Also
  // RecordSharedPool(). Empty when nothing differs or the pool is empty (a shared container is
  // never emptied). The replies to CreateContainer, UpdateContainer and StopContainer carry the
  // same updates (and record them as applied); these are for an unsolicited UpdateContainers.
  Result<std::vector<nri::CpusetUpdate>> PendingPoolUpdates();
  // The agent is sending `sent` (from PendingPoolUpdates) in an unsolicited UpdateContainers.
  // Until UpdatesApplied, replies treat each container as possibly on either its cpuset or the
  // one in flight: a claim's container created meanwhile shrinks it off the claim's CPUs even
  // if only the update in flight would have put it there.
  void UpdatesSent(const std::vector<nri::CpusetUpdate>& sent);
  // The runtime answered the UpdateContainers of `sent`: applied except `failed` (on a failed
  // call, pass `sent` as `failed`). Records the applied cpusets. Returns how many of them a
  // reply moved elsewhere while the call was in flight: the runtime may have applied the call
  // after the reply, so those are recorded on the call's cpuset and the caller pushes again
  // (PendingPoolUpdates moves them to the current pool).
  Result<size_t> UpdatesApplied(const std::vector<nri::CpusetUpdate>& sent,
                                const std::vector<nri::CpusetUpdate>& failed);
  // sharedPoolUpdates with the runtime of the last Configure: always -> true, never -> false,
  // auto -> RuntimeSafeForUnsolicitedUpdates (false before any Configure).
  bool UnsolicitedUpdatesAllowed() const;

  // The work record_moves_after_reply leaves after the replies: records the shared containers
  // they moved (OK and nothing written when there are none) and wakes the segment's waiters for
  // their commits.
  Status RecordAfterReply();
  bool has_work_after_reply() const {
    return !unrecorded_moves_.empty() || (segment_ != nullptr && segment_->has_deferred_wake());
  }

  // Things the last calls tolerated and the caller should log (a container re-pinned to the
  // shared pool during Synchronize, a failed shared-memory write of a shared container).
  std::vector<std::string> TakeWarnings();

  const std::map<std::string, TrackedContainer>& containers() const { return containers_; }
  const std::optional<nri::RuntimeInfo>& runtime() const { return runtime_; }
  // The events the policy subscribes to.
  static nri::EventMask Events();

 private:
  struct Verified {
    std::vector<std::string> claim_uids;
    CpuSet cpus;
    std::vector<int> mems;
  };
  // Parses the container's env; nullopt-equivalent (empty claim_uids) when it names no claim.
  Result<std::vector<ClaimEnv>> ParseEnv(const nri::Container& container) const;
  // Verifies parsed claims against the claims table. `for_create`: only kPrepared claims;
  // otherwise kReleasing is accepted too (the CPUs are still held).
  Result<Verified> VerifyClaims(const std::vector<ClaimEnv>& envs, bool for_create) const;
  // Another container (not the same pod uid + name) bound to `claim_uid`, if any.
  const TrackedContainer* OwnerOf(const std::string& claim_uid, const std::string& pod_uid,
                                  const std::string& name) const;
  // CPUs of claims whose container is not running (none yet, or stopped), treating the
  // container `extra_busy_id` as running on `extra_busy` (the one being created). Running shared
  // containers may keep these until that container is created (the lazy shrink).
  CpuSet LazyCpus(const std::string& extra_busy_id = "", const CpuSet& extra_busy = {}) const;
  // The running shared containers except `except_id` that lack a CPU of `pool` or have one
  // outside `pool | lazy` (those the pool moves), in id order. Empty when the pool is empty.
  // Containers holding one set (SameAs) are judged once.
  std::vector<TrackedContainer*> OffPool(const CpuSet& pool, const CpuSet& lazy,
                                         const std::string& except_id);
  // SharedPool() as the set the policy hands out: the same CpuSetRef while the pool stays.
  Result<CpuSetRef> CurrentPool();
  // One update per container in `moved`, to `pool`.
  static std::vector<nri::CpusetUpdate> UpdatesTo(const CpuSet& pool,
                                                  const std::vector<TrackedContainer*>& moved,
                                                  bool ignore_failure);
  // The updates moving the running shared containers to `pool` for a reply (the runtime applies
  // them with the reply): records them, with `also` (may be null) and the pool, in one
  // transaction, and remembers that every running shared container is settled on `pool` (so the
  // next reply skips the scan).
  Result<std::vector<nri::CpusetUpdate>> ReplyUpdates(const std::string& except_id,
                                                      const CpuSetRef& pool, const CpuSet& lazy,
                                                      bool ignore_failure,
                                                      const TrackedContainer* also);
  // How many running shared containers there are, except `except_id`.
  int RunningShared(const std::string& except_id) const;
  // Stores `t` in containers_ (replacing one with its id) and keeps exclusive_ in step.
  void Keep(TrackedContainer t);
  // Rebuilds exclusive_ from containers_ as a whole.
  void RebuildIndex();
  // RecordAfterReply() at the start of a call, a failure kept as a warning.
  void RecordMovesFirst();
  CpuSet FallbackPool() const;
  // The cpuset of an unsolicited update in flight to container `id`, or null.
  const CpuSet* InFlight(const std::string& id) const;
  // A recorded container whose entry changes only its cpuset, to `cpus`.
  struct CpusMove {
    const TrackedContainer* container;
    const CpuSet* cpus;
  };
  // Writes the given containers (upsert), cpuset moves, removals and the pool in one
  // transaction; a move of a container never recorded records it whole.
  Status Persist(const std::vector<const TrackedContainer*>& upserts,
                 const std::vector<CpusMove>& moves, const std::vector<std::string>& removals,
                 const std::optional<CpuSet>& pool, shm::WakeWaiters wake = shm::WakeWaiters::kNow);

  shm::Segment* segment_;
  PolicyOptions options_;
  std::optional<nri::RuntimeInfo> runtime_;
  std::map<std::string, TrackedContainer> containers_;
  // The exclusive entries of containers_ (a node runs a handful beside hundreds of shared ones):
  // what OwnerOf and LazyCpus walk on the container-start path. Kept by Keep, RemoveContainer and
  // RebuildIndex.
  std::map<std::string, const TrackedContainer*> exclusive_;
  // Every CPU named by a DRA_CPUSET env of a tracked container (for the fallback pool).
  std::map<std::string, CpuSet> declared_;
  // ComputeSharedPool cache, valid while the segment's generation is unchanged.
  uint64_t pool_generation_ = 1;  // odd: never a committed generation
  CpuSetRef pool_cache_;
  CpuSet claimed_cache_;  // every claim's CPUs, same generation
  // No running shared container was in OffPool(settled_pool_, settled_lazy_) after the last
  // reply; cleared by anything that may move one otherwise.
  bool settled_ = false;
  CpuSetRef settled_pool_;
  CpuSet settled_lazy_;
  std::optional<CpuSet> recorded_pool_;  // what the shared-pool record last held (ours)
  // Moved by the last reply, not yet recorded (record_moves_after_reply). Pointers into
  // containers_: every call that can erase from it records these first.
  std::vector<const TrackedContainer*> unrecorded_moves_;
  std::vector<std::string> warnings_;
  // Unsolicited updates sent and not answered yet (container id -> cpuset), and the containers
  // a reply moved meanwhile.
  std::map<std::string, CpuSetRef> in_flight_;
  std::set<std::string> moved_in_flight_;
};

}  // namespace dracpu::policy
