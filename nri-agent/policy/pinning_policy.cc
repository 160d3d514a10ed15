#include "nri-agent/policy/pinning_policy.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include "common/claim_env.h"
#include "common/log_escape.h"
#include "shm-schema/records.h"

namespace dracpu::policy {
namespace {

std::string ListOf(const std::vector<int>& nodes) {
  if (nodes.empty()) return "";
  return CpuSet::FromVector(nodes).ToListString();
}

// "ns/pod/container (id)" for messages.
// The runtime's names, escaped: they go back to the runtime and into our log.
std::string Describe(std::string_view ns, std::string_view pod, std::string_view name,
                     std::string_view id) {
  return LogEscape(ns, 64) + "/" + LogEscape(pod) + "/" + LogEscape(name) + " (" +
         LogEscape(id, 128) + ")";
}
std::string Describe(const nri::Pod& pod, const nri::Container& c) {
  return Describe(pod.namespace_name, pod.name, c.name, c.id);
}
std::string Describe(const TrackedContainer& t) {
  return Describe(t.pod_namespace, t.pod_name, t.name, t.id);
}

// The runtime's cpuset text as a set; nullopt when it does not parse (then it differs from
// anything we place).
std::optional<CpuSet> ParseReported(const std::string& text) {
  if (text.empty()) return CpuSet();
  auto r = CpuSet::ParseList(text, "container cpuset");
  if (!r.ok()) return std::nullopt;
  return *r;
}

// The cpusets of a batch of updates, each distinct text parsed once (a batch moves hundreds of
// containers to one pool): the containers given one text share its set.
class ReportedSets {
 public:
  // ParseReported(text) as a shared set.
  std::optional<CpuSetRef> Parse(const std::string& text) {
    if (!parsed_ || text != text_) {
      parsed_ = true;
      text_ = text;
      const std::optional<CpuSet> cpus = ParseReported(text);
      set_ = cpus ? std::optional<CpuSetRef>(*cpus) : std::nullopt;
    }
    return set_;
  }

 private:
  bool parsed_ = false;
  std::string text_;
  std::optional<CpuSetRef> set_;
};

TrackedContainer Track(const nri::Pod& pod, const nri::Container& c) {
  TrackedContainer t;
  t.id = c.id;
  t.sandbox_id = c.pod_sandbox_id;
  t.pod_uid = pod.uid;
  t.pod_namespace = pod.namespace_name;
  t.pod_name = pod.name;
  t.name = c.name;
  t.stopped = c.state == nri::ContainerState::kStopped;
  return t;
}

shm::ContainerSpec SpecOf(const TrackedContainer& t) {
  shm::ContainerSpec s;
  s.id = t.id;
  s.pod_uid = t.pod_uid;
  s.pod_namespace = t.pod_namespace;
  s.pod_name = t.pod_name;
  s.name = t.name;
  s.kind = t.kind;
  s.claim_uids = t.claim_uids;
  s.cpus = *t.cpus;
  s.mems = t.mems;
  return s;
}

}  // namespace

std::optional<std::vector<int>> ParseNriVersion(const std::string& version) {
  std::string_view v = version;
  if (!v.empty() && v.front() == 'v') v.remove_prefix(1);
  std::vector<int> parts;
  while (parts.size() < 3) {
    int n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p == v.data()) return std::nullopt;
    parts.push_back(n);
    v.remove_prefix(static_cast<size_t>(p - v.data()));
    if (parts.size() < 3) {
      if (v.empty() || v.front() != '.') return std::nullopt;
      v.remove_prefix(1);
    }
  }
  // Anything after the patch must be a pre-release or build suffix.
  if (!v.empty() && v.front() != '-' && v.front() != '+') return std::nullopt;
  return parts;
}

bool RuntimeSafeForUnsolicitedUpdates(const nri::RuntimeInfo& runtime) {
  auto v = ParseNriVersion(runtime.nri_version);
  if (!v) return false;
  // containerd/nri#301 (the UpdateContainers deadlock fix) is in v0.12.1.
  return *v >= std::vector<int>{0, 12, 1};
}

PinningPolicy::PinningPolicy(shm::Segment* segment, PolicyOptions options)
    : segment_(segment), options_(options) {}

void PinningPolicy::AttachSegment(shm::Segment* segment) {
  unrecorded_moves_.clear();  // the next Synchronize records every container in `segment`
  segment_ = segment;
  pool_generation_ = 1;
  recorded_pool_.reset();
  settled_ = false;
}

nri::EventMask PinningPolicy::Events() {
  return nri::MaskOf(nri::Event::kCreateContainer) | nri::MaskOf(nri::Event::kUpdateContainer) |
         nri::MaskOf(nri::Event::kStopContainer) | nri::MaskOf(nri::Event::kRemoveContainer);
}

Result<nri::EventMask> PinningPolicy::Configure(const nri::RuntimeInfo& runtime) {
  runtime_ = runtime;
  return Events();
}

void PinningPolicy::Disconnected(const Status&) {
  in_flight_.clear();
  moved_in_flight_.clear();
}

const CpuSet* PinningPolicy::InFlight(const std::string& id) const {
  if (in_flight_.empty()) return nullptr;
  auto it = in_flight_.find(id);
  return it == in_flight_.end() ? nullptr : &*it->second;
}

bool PinningPolicy::UnsolicitedUpdatesAllowed() const {
  switch (options_.shared_pool_updates) {
    case SharedPoolUpdates::kAlways:
      return true;
    case SharedPoolUpdates::kNever:
      return false;
    case SharedPoolUpdates::kAuto:
      return runtime_.has_value() && RuntimeSafeForUnsolicitedUpdates(*runtime_);
  }
  return false;
}

Result<std::vector<ClaimEnv>> PinningPolicy::ParseEnv(const nri::Container& container) const {
  std::vector<ClaimEnv> out;
  for (const std::string& entry : container.env) {
    ASSIGN_OR_RETURN(std::optional<ClaimEnv> env, ParseClaimEnvEntry(entry));
    if (!env) continue;
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const ClaimEnv& e) { return e.claim_uid == env->claim_uid; });
    if (same != out.end()) {
      if (same->cpus != env->cpus) {
        return InvalidArgumentError("environment variable " + ClaimEnvName(env->claim_uid) +
                                    " is set twice with different CPUs");
      }
      continue;
    }
    out.push_back(std::move(*env));
  }
  if (out.size() > static_cast<size_t>(shm::kMaxClaimsPerContainer)) {
    return InvalidArgumentError("the container names " + std::to_string(out.size()) +
                                " claims; at most " + std::to_string(shm::kMaxClaimsPerContainer) +
                                " are supported");
  }
  return out;
}

Result<PinningPolicy::Verified> PinningPolicy::VerifyClaims(const std::vector<ClaimEnv>& envs,
                                                            bool for_create) const {
  if (segment_ == nullptr) {
    // Not UNAVAILABLE: runtimes take that code as a broken plugin and drop it.
    return FailedPreconditionError(
        "the dra-agent's shared memory segment is not attached yet, so claims cannot be verified");
  }
  Verified v;
  bool align = false;
  std::set<int> mems;
  for (const ClaimEnv& env : envs) {
    ASSIGN_OR_RETURN(std::optional<shm::ClaimEntry> claim, segment_->FindClaim(env.claim_uid));
    if (!claim) {
      return NotFoundError("claim " + env.claim_uid +
                           " is not prepared on this node (absent from the claims table): " +
                           ClaimEnvName(env.claim_uid) + " cannot grant CPUs");
    }
    const shm::ClaimState state = claim->State();
    const bool usable = state == shm::ClaimState::kPrepared ||
                        (!for_create && state == shm::ClaimState::kReleasing);
    if (!usable) {
      return FailedPreconditionError("claim " + env.claim_uid + " is " +
                                     std::string(shm::ClaimStateName(state)) + ", not prepared");
    }
    if (claim->cpus != env.cpus) {
      return PermissionDeniedError(ClaimEnvName(env.claim_uid) + "=" + env.cpus.ToListString() +
                                   " does not match the CPUs of claim " + env.claim_uid + " (" +
                                   claim->cpus.ToListString() + ")");
    }
    v.claim_uids.push_back(env.claim_uid);
    v.cpus |= claim->cpus;
    if ((claim->flags & shm::kClaimAlignMemory) != 0) align = true;
    for (int n : shm::NodeMaskToVector(claim->mems)) mems.insert(n);
  }
  if (align) v.mems.assign(mems.begin(), mems.end());
  return v;
}

const TrackedContainer* PinningPolicy::OwnerOf(const std::string& claim_uid,
                                               const std::string& pod_uid,
                                               const std::string& name) const {
  for (const auto& [id, t] : exclusive_) {
    if (std::find(t->claim_uids.begin(), t->claim_uids.end(), claim_uid) == t->claim_uids.end()) {
      continue;
    }
    if (t->pod_uid == pod_uid && t->name == name) continue;  // the same container restarting
    return t;
  }
  return nullptr;
}

int PinningPolicy::RunningShared(const std::string& except_id) const {
  int n = 0;
  for (const auto& [id, t] : containers_) {
    if (t.kind == shm::ContainerKind::kShared && !t.stopped && id != except_id) ++n;
  }
  return n;
}

void PinningPolicy::Keep(TrackedContainer t) {
  const std::string id = t.id;
  TrackedContainer& kept = containers_[id] = std::move(t);
  if (kept.kind == shm::ContainerKind::kExclusive) {
    exclusive_[id] = &kept;
  } else {
    exclusive_.erase(id);
  }
}

void PinningPolicy::RebuildIndex() {
  exclusive_.clear();
  for (const auto& [id, t] : containers_) {
    if (t.kind == shm::ContainerKind::kExclusive) exclusive_.emplace(id, &t);
  }
}

CpuSet PinningPolicy::FallbackPool() const {
  CpuSet pool = options_.fallback_pool;
  for (const auto& [id, cpus] : declared_) pool -= cpus;
  return pool;
}

Result<CpuSet> PinningPolicy::SharedPool() {
  ASSIGN_OR_RETURN(CpuSetRef pool, CurrentPool());
  return *pool;
}

Result<CpuSetRef> PinningPolicy::CurrentPool() {
  if (segment_ == nullptr) return CpuSetRef(FallbackPool());
  const uint64_t gen = segment_->generation();
  if (gen == pool_generation_) return pool_cache_;
  shm::SnapshotOptions so;
  so.containers = false;
  ASSIGN_OR_RETURN(shm::Snapshot snap, segment_->ReadSnapshot(so));
  CpuSet pool;
  CpuSet claimed;
  for (const auto& c : snap.claims) claimed |= c.cpus;
  if (snap.topology.updated_time_ns == 0) {
    // The dra-agent has not recorded the topology yet: our own view, minus every claim.
    pool = options_.fallback_pool - claimed;
  } else {
    pool = shm::ComputeSharedPool(snap.topology, snap.config, snap.claims);
  }
  // Kept when only other records changed, so the containers given it still hold the pool's set.
  if (*pool_cache_ != pool) pool_cache_ = pool;
  claimed_cache_ = claimed;
  pool_generation_ = snap.generation;
  return pool_cache_;
}

CpuSet PinningPolicy::LazyCpus(const std::string& extra_busy_id, const CpuSet& extra_busy) const {
  if (segment_ == nullptr) return CpuSet();
  CpuSet lazy = claimed_cache_ - extra_busy;
  for (const auto& [id, t] : exclusive_) {
    if (!t->stopped && id != extra_busy_id) lazy -= *t->cpus;
  }
  return lazy;
}

std::vector<TrackedContainer*> PinningPolicy::OffPool(const CpuSet& pool, const CpuSet& lazy,
                                                      const std::string& except_id) {
  std::vector<TrackedContainer*> off;
  if (pool.Empty()) return off;  // a shared container is never emptied
  const CpuSet allowed = pool | lazy;
  // The verdict on the last set judged without an update in flight: the containers holding it
  // (usually all, given one pool) share it.
  const CpuSet* judged = nullptr;
  bool judged_settled = false;
  for (auto& [id, t] : containers_) {
    if (t.kind != shm::ContainerKind::kShared || t.stopped || id == except_id) continue;
    const CpuSet* flying = InFlight(id);
    bool settled;
    if (flying == nullptr && &*t.cpus == judged) {
      settled = judged_settled;
    } else {
      // Settled: it has every CPU of the pool, and beyond it only CPUs of claims whose
      // container is not running (kept until that container is created: the lazy shrink). With
      // an unsolicited update in flight, it will have that update's CPUs, and may still have its
      // own until then: both must be allowed.
      // The cheap test first: a container to move usually has a CPU the pool lost, in the
      // first words of its set; the other test reads the whole 1 KiB of both sets.
      const CpuSet& will_have = flying != nullptr ? *flying : *t.cpus;
      settled = t.cpus->IsSubsetOf(allowed) && (flying == nullptr || flying->IsSubsetOf(allowed)) &&
                pool.IsSubsetOf(will_have);
      if (flying == nullptr) {
        judged = &*t.cpus;
        judged_settled = settled;
      }
    }
    if (!settled) off.push_back(&t);
  }
  return off;
}

std::vector<nri::CpusetUpdate> PinningPolicy::UpdatesTo(const CpuSet& pool,
                                                        const std::vector<TrackedContainer*>& moved,
                                                        bool ignore_failure) {
  std::vector<nri::CpusetUpdate> updates;
  updates.reserve(moved.size());
  const std::string list = pool.ToListString();
  for (const TrackedContainer* t : moved) {
    updates.push_back(nri::CpusetUpdate{t->id, nri::Cpuset{list, ""}, ignore_failure});
  }
  return updates;
}

Result<std::vector<nri::CpusetUpdate>> PinningPolicy::ReplyUpdates(const std::string& except_id,
                                                                   const CpuSetRef& pool,
                                                                   const CpuSet& lazy,
                                                                   bool ignore_failure,
                                                                   const TrackedContainer* also) {
  // Settled containers stay settled while the pool is the same and the lazy CPUs lost none
  // (they only gain some when a claim's container stops). When they lost some (a claim's
  // container is created), only the containers on those CPUs move: one check each.
  const bool same_pool = settled_ && settled_pool_ == pool;
  const CpuSet lost = settled_lazy_ - lazy;
  const bool scan = !same_pool || !lost.Empty();
  std::vector<TrackedContainer*> moved;
  if (!same_pool) {
    moved = OffPool(*pool, lazy, except_id);
  } else if (!lost.Empty()) {
    const CpuSet* judged = nullptr;  // as in OffPool: the containers holding one set share it
    bool judged_hit = false;
    for (auto& [id, t] : containers_) {
      if (t.kind != shm::ContainerKind::kShared || t.stopped || id == except_id) continue;
      if (&*t.cpus != judged) {
        judged = &*t.cpus;
        judged_hit = t.cpus->Intersects(lost);
      }
      const CpuSet* flying = InFlight(id);
      if (judged_hit || (flying != nullptr && flying->Intersects(lost))) moved.push_back(&t);
    }
  }
  // The moved containers are recorded with their new cpuset in place (hundreds in one reply:
  // no copies), and take it in memory only once it is recorded.
  const bool later = options_.record_moves_after_reply && segment_ != nullptr;
  std::vector<CpusMove> moves;
  if (!later) {
    moves.reserve(moved.size());
    for (const TrackedContainer* t : moved) moves.push_back({t, &*pool});
  }
  std::vector<const TrackedContainer*> upserts;
  if (also != nullptr) upserts.push_back(also);
  RETURN_IF_ERROR(Persist(upserts, moves, {},
                          pool->Empty() ? std::nullopt : std::optional<CpuSet>(*pool),
                          later ? shm::WakeWaiters::kDeferred : shm::WakeWaiters::kNow));
  for (TrackedContainer* t : moved) {
    t->cpus = pool;
    // The runtime may apply this reply before or after the unsolicited update in flight.
    if (InFlight(t->id) != nullptr) moved_in_flight_.insert(t->id);
  }
  if (later) unrecorded_moves_.insert(unrecorded_moves_.end(), moved.begin(), moved.end());
  // Every running shared container other than `except_id` is settled now (the excepted one is
  // being created with the pool, re-asserted to it, exclusive, or stopping).
  if (scan) {
    settled_ = !pool->Empty();
    settled_pool_ = pool;
    settled_lazy_ = lazy;
  }
  return UpdatesTo(*pool, moved, ignore_failure);
}

Status PinningPolicy::RecordAfterReply() {
  if (segment_ == nullptr) return Status();
  std::vector<CpusMove> moves;
  moves.reserve(unrecorded_moves_.size());
  for (const TrackedContainer* t : unrecorded_moves_) moves.push_back({t, &*t->cpus});
  unrecorded_moves_.clear();
  Status s = Persist({}, moves, {}, std::nullopt);  // a kNow commit: wakes for the replies too
  segment_->WakeDeferredWaiters();                  // when it wrote nothing
  return s;
}

void PinningPolicy::RecordMovesFirst() {
  if (Status s = RecordAfterReply(); !s.ok()) {
    warnings_.push_back("not recorded in shared memory: " + s.ToString());
  }
}

Status PinningPolicy::Persist(const std::vector<const TrackedContainer*>& upserts,
                              const std::vector<CpusMove>& moves,
                              const std::vector<std::string>& removals,
                              const std::optional<CpuSet>& pool, shm::WakeWaiters wake) {
  if (segment_ == nullptr) return Status();
  if (upserts.empty() && moves.empty() && removals.empty() &&
      (!pool || (recorded_pool_ && *recorded_pool_ == *pool))) {
    return Status();
  }
  ASSIGN_OR_RETURN(shm::WriteTransaction tx, segment_->Begin());
  // Holding the lock, nobody else commits: our writes leave the claims (and so the pool cache)
  // as they are, so the cache stays valid across our own commit.
  const bool cache_valid = segment_->generation() == pool_generation_;
  Status first;
  auto keep_first = [&first](const Status& s, const TrackedContainer& t) {
    if (!s.ok() && first.ok()) first = s.WithContext("recording container " + Describe(t));
  };
  for (const std::string& id : removals) {
    auto r = tx.RemoveContainer(id);
    if (!r.ok() && first.ok()) first = r.status();
  }
  for (const TrackedContainer* t : upserts) keep_first(tx.UpsertContainer(SpecOf(*t)), *t);
  for (const CpusMove& m : moves) {
    Status s = tx.SetContainerCpus(m.container->id, *m.cpus);
    if (s.code() == StatusCode::kNotFound) {  // never recorded (an earlier write failed)
      shm::ContainerSpec spec = SpecOf(*m.container);
      spec.cpus = *m.cpus;
      s = tx.UpsertContainer(spec);
    }
    keep_first(s, *m.container);
  }
  if (pool && (!recorded_pool_ || *recorded_pool_ != *pool)) {
    Status s = tx.SetSharedPool(*pool);
    if (s.ok()) {
      recorded_pool_ = *pool;
    } else if (first.ok()) {
      first = s;
    }
  }
  const uint64_t committed = tx.Commit(wake);
  if (cache_valid && committed != 0) pool_generation_ = committed;
  return first;
}

Result<nri::CreateContainerResult> PinningPolicy::CreateContainer(const nri::Pod& pod,
                                                                  const nri::Container& container) {
  RecordMovesFirst();
  auto envs = ParseEnv(container);
  if (!envs.ok()) return envs.status().WithContext("container " + Describe(pod, container));

  TrackedContainer t = Track(pod, container);
  t.stopped = false;
  nri::CreateContainerResult result;

  if (envs->empty()) {  // a shared container
    ASSIGN_OR_RETURN(CpuSetRef pool, CurrentPool());
    if (pool->Empty()) {
      return ResourceExhaustedError(
          "container " + Describe(pod, container) +
          ": the shared CPU pool is empty (every allocatable CPU is held by a claim); refusing "
          "to run a shared container on exclusive CPUs");
    }
    t.kind = shm::ContainerKind::kShared;
    t.cpus = pool;
    result.adjust.cpus = pool->ToListString();
    // The reply also widens running shared containers after a release (safe on every runtime).
    auto widened = ReplyUpdates(t.id, pool, LazyCpus(), /*ignore_failure=*/true, &t);
    if (widened.ok()) {
      result.updates = std::move(*widened);
    } else {
      warnings_.push_back("not recorded in shared memory: " + widened.status().ToString());
    }
    declared_.erase(t.id);
    Keep(std::move(t));
    return result;
  }

  // An exclusive container.
  auto verified = VerifyClaims(*envs, /*for_create=*/true);
  if (!verified.ok()) return verified.status().WithContext("container " + Describe(pod, container));
  for (const std::string& uid : verified->claim_uids) {
    if (const TrackedContainer* owner = OwnerOf(uid, pod.uid, container.name)) {
      return AlreadyExistsError("container " + Describe(pod, container) + ": claim " + uid +
                                " is already used by container " + Describe(*owner) +
                                " of pod uid " + owner->pod_uid +
                                "; a claim serves exactly one container");
    }
  }
  ASSIGN_OR_RETURN(CpuSetRef pool, CurrentPool());
  // Counted only when it matters: the walk over every container stays off the usual path.
  const int running_shared = pool->Empty() ? RunningShared(container.id) : 0;
  if (running_shared > 0) {
    return ResourceExhaustedError("container " + Describe(pod, container) +
                                  ": its claims leave the shared CPU pool empty while " +
                                  std::to_string(running_shared) +
                                  " shared containers run; refusing (they would keep running on "
                                  "exclusive CPUs)");
  }
  t.kind = shm::ContainerKind::kExclusive;
  t.claim_uids = verified->claim_uids;
  t.cpus = verified->cpus;
  t.mems = verified->mems;
  result.adjust.cpus = t.cpus->ToListString();
  result.adjust.mems = ListOf(t.mems);
  // Shrink: every running shared container that has one of these CPUs (or is otherwise off the
  // pool) gets the pool. Recorded first, with the binding: only a recorded binding may take
  // effect (the table is the binding's witness).
  auto shrunk =
      ReplyUpdates(container.id, pool, LazyCpus(t.id, *t.cpus), /*ignore_failure=*/false, &t);
  if (!shrunk.ok()) {
    return shrunk.status().WithContext("container " + Describe(pod, container) +
                                       ": recording the claim binding");
  }
  result.updates = std::move(*shrunk);
  CpuSet declared;
  for (const ClaimEnv& e : *envs) declared |= e.cpus;
  declared_[t.id] = declared;
  Keep(std::move(t));
  return result;
}

Result<std::vector<nri::CpusetUpdate>> PinningPolicy::UpdateContainer(
    const nri::Pod&, const nri::Container& container, const nri::Cpuset& requested) {
  RecordMovesFirst();
  // The reply carries the widening of the other running shared containers (entries for other
  // containers are applied by the runtime as extra updates), then our own re-assertion.
  ASSIGN_OR_RETURN(CpuSetRef pool, CurrentPool());
  std::vector<nri::CpusetUpdate> out;
  auto it = containers_.find(container.id);
  TrackedContainer* t = it == containers_.end() ? nullptr : &it->second;
  // A running shared container gets the current pool unless it is settled on it (all of the
  // pool, beyond it only lazy CPUs), not the one it last got (that can be a pool from before a
  // Prepare or an Unprepare). Found by the soak (--runtime legacy).
  const CpuSet lazy = LazyCpus();
  const bool moved = t != nullptr && t->kind == shm::ContainerKind::kShared && !t->stopped &&
                     !pool->Empty() &&
                     !(pool->IsSubsetOf(*t->cpus) && t->cpus->IsSubsetOf(*pool | lazy));
  if (moved) t->cpus = pool;
  auto others =
      ReplyUpdates(container.id, pool, lazy, /*ignore_failure=*/true, moved ? t : nullptr);
  if (others.ok()) {
    out = std::move(*others);
  } else {
    warnings_.push_back("not recorded in shared memory: " + others.status().ToString());
  }
  if (t == nullptr) return out;
  const std::string mems = ListOf(t->mems);
  if (!moved) {  // re-assert ours only when the update touches the cpuset
    if (requested.cpus.empty()) return out;
    const std::optional<CpuSet> wanted = ParseReported(requested.cpus);
    const bool mems_differ = !mems.empty() && !requested.mems.empty() && requested.mems != mems;
    if (wanted && *wanted == *t->cpus && !mems_differ) return out;
  }
  out.push_back(nri::CpusetUpdate{t->id, nri::Cpuset{t->cpus->ToListString(), mems}, false});
  return out;
}

Result<std::vector<nri::CpusetUpdate>> PinningPolicy::StopContainer(
    const nri::Pod&, const nri::Container& container) {
  RecordMovesFirst();
  auto it = containers_.find(container.id);
  if (it != containers_.end()) it->second.stopped = true;
  // The reply widens the running shared containers (a release since the last event). The
  // stopping container's own claim stays out of the pool until its Unprepare.
  ASSIGN_OR_RETURN(CpuSetRef pool, CurrentPool());
  auto widened = ReplyUpdates(container.id, pool, LazyCpus(), /*ignore_failure=*/true, nullptr);
  if (!widened.ok()) {
    warnings_.push_back("not recorded in shared memory: " + widened.status().ToString());
    return std::vector<nri::CpusetUpdate>{};
  }
  return widened;
}

Status PinningPolicy::RemoveContainer(const nri::Pod&, const nri::Container& container) {
  RecordMovesFirst();
  containers_.erase(container.id);
  exclusive_.erase(container.id);
  declared_.erase(container.id);
  in_flight_.erase(container.id);
  moved_in_flight_.erase(container.id);
  return Persist({}, {}, {container.id}, std::nullopt);
}

Result<std::vector<nri::CpusetUpdate>> PinningPolicy::Synchronize(
    const std::vector<nri::Pod>& pods, const std::vector<nri::Container>& containers) {
  RecordMovesFirst();
  // A new connection: what the runtime reports is what it applied.
  in_flight_.clear();
  moved_in_flight_.clear();
  std::map<std::string, const nri::Pod*> pod_by_id;
  for (const auto& p : pods) pod_by_id[p.id] = &p;
  const nri::Pod no_pod;

  // The recorded owner of each claim (container id), preferred over other claimants.
  std::map<std::string, std::string> recorded_owner;
  std::vector<std::string> table_ids;
  if (segment_ != nullptr) {
    shm::SnapshotOptions so;
    so.claims = false;
    ASSIGN_OR_RETURN(shm::Snapshot snap, segment_->ReadSnapshot(so));
    for (const auto& e : snap.containers) {
      table_ids.emplace_back(e.Id());
      if (e.Kind() != shm::ContainerKind::kExclusive) continue;
      for (uint32_t i = 0; i < e.claim_count; ++i) {
        recorded_owner[std::string(e.ClaimUid(static_cast<int>(i)))] = std::string(e.Id());
      }
    }
  }
  std::set<std::string> present;
  for (const auto& c : containers) present.insert(c.id);

  std::map<std::string, TrackedContainer> rebuilt;
  std::map<std::string, CpuSet> declared;
  // Claim uid -> (pod uid, container name) that holds it in this rebuild.
  std::map<std::string, std::pair<std::string, std::string>> holder;
  std::vector<const nri::Container*> order;
  // Recorded owners first, so that a forged claimant never displaces them.
  for (const auto& c : containers) {
    bool recorded = false;
    for (const auto& [uid, id] : recorded_owner) recorded = recorded || id == c.id;
    if (recorded) order.push_back(&c);
  }
  for (const auto& c : containers) {
    if (std::find(order.begin(), order.end(), &c) == order.end()) order.push_back(&c);
  }

  for (const nri::Container* c : order) {
    auto pit = pod_by_id.find(c->pod_sandbox_id);
    const nri::Pod& pod = pit == pod_by_id.end() ? no_pod : *pit->second;
    TrackedContainer t = Track(pod, *c);
    t.kind = shm::ContainerKind::kShared;
    auto envs = ParseEnv(*c);
    // A stopped container is never updated, and one whose claim was released after it stopped
    // is the normal end of a pod (the kubelet unprepares once no container runs): no warning.
    auto warn = [&](const std::string& why) {
      if (!t.stopped) {
        warnings_.push_back("container " + Describe(pod, *c) + ": " + why +
                            "; re-pinned to the shared pool");
      }
    };
    if (!envs.ok()) {
      warn(envs.status().ToString());
    } else if (!envs->empty()) {
      CpuSet env_cpus;
      for (const ClaimEnv& e : *envs) env_cpus |= e.cpus;
      declared[t.id] = env_cpus;
      if (segment_ == nullptr) {
        // Cannot verify yet: keep what the env says (no update), and keep those CPUs out of the
        // conservative pool.
        t.kind = shm::ContainerKind::kExclusive;
        for (const ClaimEnv& e : *envs) t.claim_uids.push_back(e.claim_uid);
        t.cpus = env_cpus;
      } else {
        auto verified = VerifyClaims(*envs, /*for_create=*/false);
        std::string conflict;
        if (verified.ok()) {
          for (const std::string& uid : verified->claim_uids) {
            auto h = holder.find(uid);
            if (h != holder.end() && h->second != std::make_pair(pod.uid, c->name)) {
              conflict = "claim " + uid + " is held by another container";
            }
          }
        }
        if (!verified.ok() || !conflict.empty()) {
          warn(verified.ok() ? conflict : verified.status().ToString());
        } else {
          t.kind = shm::ContainerKind::kExclusive;
          t.claim_uids = verified->claim_uids;
          t.cpus = verified->cpus;
          t.mems = verified->mems;
          for (const std::string& uid : t.claim_uids) holder[uid] = {pod.uid, c->name};
        }
      }
    }
    rebuilt[t.id] = std::move(t);
  }

  containers_ = std::move(rebuilt);
  RebuildIndex();
  declared_ = std::move(declared);
  settled_ = false;
  ASSIGN_OR_RETURN(CpuSetRef pool, CurrentPool());

  std::vector<nri::CpusetUpdate> updates;
  std::map<std::string, const nri::Container*> by_id;
  for (const auto& c : containers) by_id[c.id] = &c;
  const std::string pool_list = pool->ToListString();
  int emptied = 0;
  for (auto& [id, t] : containers_) {
    const nri::Container& c = *by_id.at(id);
    const std::optional<CpuSet> reported = ParseReported(c.cpuset.cpus);
    if (t.kind == shm::ContainerKind::kShared) {
      if (pool->Empty()) {
        // Nothing to give it; emptying is never an option. Keep what it has.
        t.cpus = reported.value_or(CpuSet());
        if (!t.stopped) ++emptied;
        continue;
      }
      t.cpus = pool;
    }
    if (t.stopped) continue;
    const std::string mems = ListOf(t.mems);
    const bool mems_differ = !mems.empty() && c.cpuset.mems != mems;
    if (reported && *reported == *t.cpus && !mems_differ) continue;
    updates.push_back(nri::CpusetUpdate{
        id,
        nri::Cpuset{t.kind == shm::ContainerKind::kShared ? pool_list : t.cpus->ToListString(),
                    mems},
        false});
  }
  if (emptied > 0) {
    warnings_.push_back("the shared CPU pool is empty: " + std::to_string(emptied) +
                        " shared containers keep their current cpusets");
  }

  std::vector<std::string> removals;
  for (const std::string& id : table_ids) {
    if (present.count(id) == 0) removals.push_back(id);
  }
  std::vector<const TrackedContainer*> upserts;
  upserts.reserve(containers_.size());
  for (const auto& [id, t] : containers_) upserts.push_back(&t);
  Status s =
      Persist(upserts, {}, removals, pool->Empty() ? std::nullopt : std::optional<CpuSet>(*pool));
  if (!s.ok())
    warnings_.push_back("Synchronize not fully recorded in shared memory: " + s.ToString());
  return updates;
}

Status PinningPolicy::RecordSharedPool() {
  ASSIGN_OR_RETURN(CpuSet pool, SharedPool());
  if (pool.Empty() || segment_ == nullptr) return Status();
  return Persist({}, {}, {}, pool);  // writes nothing when the record already holds it
}

Result<std::vector<nri::CpusetUpdate>> PinningPolicy::PendingPoolUpdates() {
  RecordMovesFirst();
  RETURN_IF_ERROR(RecordSharedPool());
  ASSIGN_OR_RETURN(CpuSet pool, SharedPool());
  return UpdatesTo(pool, OffPool(pool, LazyCpus(), ""), /*ignore_failure=*/true);
}

void PinningPolicy::UpdatesSent(const std::vector<nri::CpusetUpdate>& sent) {
  ReportedSets sets;
  for (const auto& u : sent) {
    if (std::optional<CpuSetRef> cpus = sets.Parse(u.cpuset.cpus)) {
      in_flight_[u.container_id] = std::move(*cpus);
    }
  }
}

Result<size_t> PinningPolicy::UpdatesApplied(const std::vector<nri::CpusetUpdate>& sent,
                                             const std::vector<nri::CpusetUpdate>& failed) {
  RecordMovesFirst();
  std::set<std::string> failed_ids;
  for (const auto& f : failed) failed_ids.insert(f.container_id);
  std::vector<CpusMove> moves;
  size_t raced = 0;
  ReportedSets sets;
  for (const auto& u : sent) {
    in_flight_.erase(u.container_id);
    const bool moved_meanwhile = moved_in_flight_.erase(u.container_id) != 0;
    if (failed_ids.count(u.container_id) != 0) continue;
    auto it = containers_.find(u.container_id);
    if (it == containers_.end()) continue;  // removed meanwhile
    std::optional<CpuSetRef> cpus = sets.Parse(u.cpuset.cpus);
    if (!cpus) continue;
    // A reply moved it meanwhile: whichever the runtime applied last is unknown, so take this
    // batch's (the older) and let the caller push the current pool again.
    if (moved_meanwhile && **cpus != *it->second.cpus) ++raced;
    it->second.cpus = std::move(*cpus);
    moves.push_back({&it->second, &*it->second.cpus});
  }
  settled_ = false;  // replies sent meanwhile may have moved these containers again
  RETURN_IF_ERROR(Persist({}, moves, {}, std::nullopt));
  return raced;
}

std::vector<std::string> PinningPolicy::TakeWarnings() { return std::exchange(warnings_, {}); }

}  // namespace dracpu::policy
