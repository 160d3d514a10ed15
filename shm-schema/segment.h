// Segment: an attached dracpu shared-memory segment, the state both agents share.
//
// Claim lifetime across the two agents (the one place it is written down):
//  * dra-agent Prepare: in one transaction the agent chooses CPUs among
//    CpuAdmission::Grantable and WriteTransaction::ReserveClaim admits them (cpu_admission.h:
//    no other claim's, allocatable, online, the shared-pool floor) and records the claim
//    kReserved; the agent writes the CDI spec, then records it kPrepared (UpsertClaim) and
//    acknowledges. A repeated Prepare finds the claim and answers with the CPUs it holds.
//  * nri-agent CreateContainer: reads the claims table (FindClaim, lock-free), refuses a
//    DRA_CPUSET_<uid> whose claim is absent or whose CPUs differ, records the container
//    (kExclusive, claim uids, applied CPUs) and, in its reply, shrinks the running shared
//    containers off the claim's CPUs.
//  * StopContainer keeps the container's entry (the claim's CPUs stay out of the shared pool);
//    RemoveContainer removes it.
//  * dra-agent Unprepare: marks the claim kReleasing, removes the CDI file, removes the claim;
//    the nri-agent observes it (WaitForChange), records the wider pool, and widens the running
//    shared containers in the reply to the next container event (and, on runtimes known safe,
//    with one coalesced UpdateContainers).
//  * Synchronize (nri-agent restart) merges the runtime's containers with the containers table,
//    never dropping a prepared claim that has no container yet.
//
// Concurrency: one robust, process-shared pthread mutex serializes writers (WriteTransaction);
// each table has exactly one writer role (claims, config, topology: dra-agent; containers, shared
// pool: nri-agent). Readers never lock: a seqlock generation (odd while a write is in progress)
// lets them take consistent copies (ReadSnapshot, FindClaim, FindContainer) and WaitForChange
// sleeps on a shared futex on it. A Segment object is safe to use from several threads for reads;
// transactions of one Segment must not overlap in one thread (the mutex is not recursive).
//
// Crashes: a writer that dies holding the mutex leaves EOWNERDEAD to the next locker, which
// repairs before its own transaction: odd generation = torn write; an entry whose in-place
// overwrite was interrupted is restored from the undo record (the version saved just before);
// every used entry's checksum is verified; damaged or duplicate entries are dropped (one line
// each in RecoveryReport, for the caller to log; the dra-agent re-adds claims from its CDI
// files); indexes are rebuilt; then pthread_mutex_consistent. A transaction is not atomic as a
// whole: its completed operations stay, the interrupted one is rolled back or (for an insert)
// never becomes visible.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpu_set.h"
#include "common/status.h"
#include "shm-schema/cpu_admission.h"
#include "shm-schema/layout.h"
#include "shm-schema/records.h"
#include "shm-schema/shm_file.h"

namespace dracpu::shm {

// Points inside a write where tests inject a SIGKILL (OpenOptions::kill_point).
enum class KillPoint : int {
  kAfterGenerationOdd = 1,
  kMidRecord = 2,    // half of an entry's words are written
  kAfterRecord = 3,  // the entry is written, counts and index not yet
  kAfterCount = 4,
  kAfterIndex = 5,
  kBeforeGenerationEven = 6,
  kAfterGenerationEven = 7,  // committed, mutex still held
};
inline constexpr int kKillPoints = 7;
using KillPointHook = void (*)(KillPoint);

// What the locker found and did after a previous holder died.
struct RecoveryReport {
  bool owner_died = false;  // EOWNERDEAD (false: an odd generation without it)
  bool torn = false;        // the generation was odd: a write was interrupted
  uint64_t generation_found = 0;
  std::vector<std::string> actions;  // one line per repaired or dropped record
};

struct OpenOptions {
  Role role = Role::kReader;
  // Create the segment when the file is missing (the dra-agent does; the nri-agent waits).
  bool create_if_missing = false;
  std::string node_name;  // recorded when creating
  std::string version;    // the agent's version string, recorded in its AgentRecord
  uint32_t claims_capacity = kDefaultClaimsCapacity;          // when creating
  uint32_t containers_capacity = kDefaultContainersCapacity;  // when creating
  // For a writer role, when the existing segment is corrupt or incompatible (the Status says
  // why): return true to replace it with a new empty segment (then Segment::rebuilt_because()
  // holds the reason and the caller repopulates it from the durable sources), false to fail
  // Open with that Status. Only the dra-agent role may rebuild. Unset: fail.
  std::function<bool(const Status& why)> rebuild;
  // Role::kReader only: also open the file read-write and map its first page writable, used for
  // nothing but counting this reader in the header's `waiters` word, so that WaitForChange
  // sleeps until a writer's FUTEX_WAKE instead of re-checking every 20 ms (dracpu-shm --watch).
  // Every read stays on the read-only mapping. When the file cannot be opened read-write
  // (permissions, a read-only mount) Open still succeeds and WaitForChange re-checks as without
  // it. A reader killed while waiting leaves the count one too high: writers then make one
  // needless FUTEX_WAKE per commit, nothing worse.
  bool reader_waits = false;
  // Seams: /proc/self/ns/pid inode and the boot id. Unset: read from /proc.
  std::function<Result<uint64_t>()> pid_namespace_inode;
  std::function<Result<std::string>()> boot_id;
  // Seam: CLOCK_BOOTTIME in ns, for heartbeats and their age (a clock every process on the node
  // shares, so not the Clock of common/clock.h). Unset: the kernel's.
  std::function<uint64_t()> boottime_ns;
  // Tests only: called at each KillPoint of every write.
  KillPointHook kill_point = nullptr;
};

// Identity of a segment (immutable header fields).
struct SegmentIdentity {
  uint32_t major = 0;
  uint32_t minor = 0;
  uint64_t segment_size = 0;
  uint32_t claims_capacity = 0;
  uint32_t containers_capacity = 0;
  std::string boot_id;
  std::string node_name;
  uint64_t created_time_ns = 0;
};

// A consistent copy of the segment's state (plain local memory).
struct Snapshot {
  uint64_t generation = 0;
  // False only with SnapshotOptions::allow_inconsistent when no consistent copy could be taken
  // within the timeout (a writer died mid-write and nobody has locked since): the copy may be torn.
  bool consistent = true;
  SegmentIdentity identity;
  AgentRecord agents[kAgentRoles]{};
  ConfigSummary config{};
  TopologySummary topology{};
  SharedPoolRecord shared_pool{};
  std::vector<ClaimEntry> claims;          // in table order
  std::vector<ContainerEntry> containers;  // in table order

  const ClaimEntry* FindClaim(std::string_view uid) const;  // linear
  const ContainerEntry* FindContainer(std::string_view id) const;
};

struct SnapshotOptions {
  bool claims = true;
  bool containers = true;
  // How long to retry while writes keep interrupting the copy.
  std::chrono::milliseconds timeout{1000};
  bool allow_inconsistent = false;
};

// What one agent role looks like from the segment (for health checks and dracpu-shm).
struct AgentStatus {
  bool attached = false;  // the role has attached to this segment at least once
  bool live = false;      // its process holds the role lock now
  uint32_t pid = 0;       // in the agent's PID namespace
  // Time since its last Heartbeat(); nullopt when it never beat.
  std::optional<std::chrono::nanoseconds> heartbeat_age;
  std::string version;
};

class WriteTransaction;

// When a commit wakes the processes blocked in WaitForChange.
enum class WakeWaiters {
  kNow,
  // Later, at the writer's Segment::WakeDeferredWaiters (or its next kNow commit, or the
  // Segment's destruction): a writer answering a latency-bound call keeps the futex wake, and
  // the scheduling of the threads it wakes, off that call's path. The generation is published
  // at the commit either way; only sleepers learn of it late.
  kDeferred,
};

// How WriteTransaction::ReserveClaim admits a claim.
struct ReserveOptions {
  // The rule to apply, for a caller with a fresher view than the records (the dra-agent reads the
  // online CPUs from sysfs at every placement). Unset: CpuAdmission::FromRecords over this
  // segment's topology and config, and, until the topology is published, only the overlap check.
  std::optional<CpuAdmission> admission;
  // Appended to a floor refusal (CpuAdmission::Admit's floor_note).
  std::string floor_note;
};

class Segment {
 public:
  // Opens (and with create_if_missing creates) the segment at `path`.
  //  * Writer roles take the role's F_OFD_SETLK byte lock first: FAILED_PRECONDITION when another
  //    process holds it ("a second dra-agent on this node"). Then validate the header (magic,
  //    major, identity checksum, sizes, table layout, boot id), lock once (recovering a dead
  //    owner), refuse a live peer in another PID namespace (FAILED_PRECONDITION), verify every
  //    record's checksum, and record this agent (pid, PID-namespace inode, start time, version).
  //  * Role::kReader maps read-only, never locks, checks magic/major/checksum/sizes only.
  // Errors: NOT_FOUND (file missing), DATA_LOSS (corrupt: short, bad magic, bad checksum,
  // inconsistent sizes), FAILED_PRECONDITION (other major version, other boot, role held, PID
  // namespace), each message naming the path and both sides of the mismatch.
  static Result<std::unique_ptr<Segment>> Open(const std::string& path, const OpenOptions& options);

  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  const std::string& path() const { return path_; }
  Role role() const { return role_; }
  const SegmentIdentity& identity() const { return identity_; }
  // Repairs done while opening (a previous holder died), if any. The caller logs them.
  const std::optional<RecoveryReport>& open_recovery() const { return open_recovery_; }
  // Why the segment was rebuilt during Open (the rebuild callback said yes), if it was.
  const std::optional<Status>& rebuilt_because() const { return rebuilt_because_; }
  // True when `path` no longer names the mapped file (another agent rebuilt it): reopen.
  bool IsStale() const;

  // --- lock-free reads (any role)
  uint64_t generation() const;
  Result<Snapshot> ReadSnapshot(const SnapshotOptions& options = {}) const;
  // Same, reusing `out`'s buffers (no allocation once they are large enough).
  Status ReadSnapshotInto(Snapshot& out, const SnapshotOptions& options = {}) const;
  // One claim / container by key, by the index (no full copy). nullopt when absent.
  // UNAVAILABLE when the generation stays odd past `timeout` (a writer died mid-write).
  Result<std::optional<ClaimEntry>> FindClaim(
      std::string_view uid,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(1000)) const;
  Result<std::optional<ContainerEntry>> FindContainer(
      std::string_view id,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(1000)) const;
  // Blocks until the generation is even and differs from `seen`, or `timeout` passes
  // (DEADLINE_EXCEEDED), or `*cancel` is true after a wake-up (CANCELLED; a signal handler that
  // sets it interrupts the wait when installed without SA_RESTART). Returns the new generation.
  // A reader opened without reader_waits cannot register as a waiter, so it re-checks every
  // 20 ms instead of relying on the writer's wake.
  // A stop requested on `stop` wakes the wait at once (every waiter on the segment re-checks)
  // and returns CANCELLED, so a registered waiter can block for as long as nothing changes;
  // request_stop() returns once this wait has seen the request (it keeps waking until then).
  Result<uint64_t> WaitForChange(uint64_t seen, std::chrono::nanoseconds timeout,
                                 const std::atomic<bool>* cancel = nullptr,
                                 const std::stop_token& stop = {}) const;
  // Whether WaitForChange sleeps until a writer's wake (a writer, or a reader with reader_waits
  // whose read-write open succeeded).
  bool wakes_on_change() const { return WaitersWord() != nullptr; }
  // Whether the other role's agent process is alive (holds its role lock).
  Result<bool> RoleLive(Role role) const;
  // Liveness and heartbeat age of an agent role (e.g. the dra-agent's health check of the
  // nri-agent: live and heartbeat_age under 30 s).
  Result<AgentStatus> GetAgentStatus(Role role) const;

  // --- writers (Role::kDraAgent / Role::kNriAgent)
  // Locks the segment for a transaction (recovering from a dead owner first).
  // FAILED_PRECONDITION for a reader, or when a live peer is in another PID namespace.
  Result<WriteTransaction> Begin();
  // Stores now (CLOCK_BOOTTIME) in this role's heartbeat_ns; no lock, no generation change.
  void Heartbeat();
  // Wakes the waiters of the commits made with WakeWaiters::kDeferred since the last wake;
  // nothing when there were none. On the writing thread (the one that commits).
  void WakeDeferredWaiters();
  bool has_deferred_wake() const { return wake_deferred_; }

 private:
  friend class WriteTransaction;
  Segment() = default;

  // `segment_invalid` is set when the failure is the file's content (corrupt or incompatible).
  static Result<std::unique_ptr<Segment>> OpenExisting(const std::string& path,
                                                       const OpenOptions& options,
                                                       bool& segment_invalid);
  static Result<std::unique_ptr<Segment>> CreateNew(const std::string& path,
                                                    const OpenOptions& options, bool replace);
  Status Validate() const;
  Status AttachWriter(const OpenOptions& options);
  Status CheckPeerNamespace() const;
  Result<RecoveryReport> Repair(bool owner_died);
  void RestoreFromUndo(SegmentHeader* h, RecoveryReport& report);
  Status VerifyRecordsLocked() const;
  void RebuildClaimsIndexLocked();
  void RebuildContainersIndexLocked();

  SegmentHeader* header() const { return static_cast<SegmentHeader*>(file_.data()); }
  // The header's waiters word through a writable mapping; nullptr for a plain reader.
  uint32_t* WaitersWord() const;
  uint8_t* base() const { return static_cast<uint8_t*>(file_.data()); }

  std::string path_;
  Role role_ = Role::kReader;
  ShmFile file_;
  ShmFile waiter_page_;  // reader_waits: the first page, mapped writable
  SegmentIdentity identity_;
  TableDescriptor claims_desc_{};  // validated local copies
  TableDescriptor containers_desc_{};
  ClaimEntry* claims_ = nullptr;
  uint32_t* claims_index_ = nullptr;
  ContainerEntry* containers_ = nullptr;
  uint32_t* containers_index_ = nullptr;
  uint64_t pid_ns_inode_ = 0;
  std::function<uint64_t()> boottime_ns_ = BoottimeNs;
  KillPointHook kill_point_ = nullptr;
  bool wake_deferred_ = false;  // a kDeferred commit has not woken its waiters yet
  std::optional<RecoveryReport> open_recovery_;
  std::optional<Status> rebuilt_because_;
};

// An open write: holds the segment's mutex from Segment::Begin until Commit or destruction
// (which commits). Mutations are applied in place immediately and become visible to readers
// atomically at Commit (the generation goes odd at the first mutation and even at Commit). Each
// mutation validates first and leaves the segment unchanged when it fails; there is no rollback
// of earlier successful mutations. Move-only; not thread-safe.
class WriteTransaction {
 public:
  WriteTransaction(WriteTransaction&& other) noexcept;
  WriteTransaction& operator=(WriteTransaction&&) = delete;
  WriteTransaction(const WriteTransaction&) = delete;
  ~WriteTransaction();

  // Repairs done when this transaction's lock found a dead previous owner, if any.
  const std::optional<RecoveryReport>& recovery() const { return recovery_; }

  // Claims (dra-agent). Upsert inserts or replaces by uid; RESOURCE_EXHAUSTED when full.
  Status UpsertClaim(const ClaimSpec& spec);
  Status UpsertClaimEntry(const ClaimEntry& entry);
  // True when it was present.
  Result<bool> RemoveClaim(std::string_view uid);
  std::optional<ClaimEntry> FindClaim(std::string_view uid) const;
  uint32_t claim_count() const;
  const ClaimEntry& claim_at(uint32_t i) const;  // i < claim_count(); valid until the next write
  // Union of every claim's CPUs, except the claim `except_uid` (for idempotent re-reserve).
  CpuSet ClaimedCpus(std::string_view except_uid = {}) const;
  // dra-agent Prepare, checked and atomic: records `spec` only if CpuAdmission::Admit accepts its
  // CPUs against every other claim (the rule and its error codes: cpu_admission.h), else leaves
  // the table unchanged. Idempotent: the same uid with the same CPUs succeeds (and updates the
  // other fields, e.g. state); with other CPUs ALREADY_EXISTS. A kReleasing entry of the same uid
  // is replaced (its CPUs do not count against `spec`). RESOURCE_EXHAUSTED also when the table is
  // full. Messages name the CPUs and any other claim, not `spec`: the caller names it.
  Status ReserveClaim(const ClaimSpec& spec, const ReserveOptions& options = {});
  Status SetConfig(const ConfigSummary& config);        // dra-agent; checksum/time filled in
  Status SetTopology(const TopologySummary& topology);  // dra-agent

  // Containers and the shared pool (nri-agent).
  Status UpsertContainer(const ContainerSpec& spec);
  Status UpsertContainerEntry(const ContainerEntry& entry);
  // Sets the applied cpuset.cpus (and the placement time: now) of the recorded container `id`,
  // every other field kept: the shrink and widening of shared containers, hundreds per reply,
  // without re-encoding each record. NOT_FOUND when `id` is not recorded.
  Status SetContainerCpus(std::string_view id, const CpuSet& cpus);
  Result<bool> RemoveContainer(std::string_view id);
  std::optional<ContainerEntry> FindContainer(std::string_view id) const;
  uint32_t container_count() const;
  const ContainerEntry& container_at(uint32_t i) const;
  Status SetSharedPool(const CpuSet& cpus);
  const TopologySummary& topology() const;
  const ConfigSummary& config() const;

  // Makes the writes visible (generation even), unlocks, wakes waiters (`wake`; a kNow commit
  // also wakes for earlier kDeferred ones). Returns the generation this transaction published
  // (the current one when it wrote nothing); waiting for a change from it (WaitForChange) sees
  // the next writer's commit. Idempotent (later calls return 0). Destruction commits with kNow.
  uint64_t Commit(WakeWaiters wake = WakeWaiters::kNow);

 private:
  friend class Segment;
  friend struct TableOps;
  explicit WriteTransaction(Segment* segment) : segment_(segment) {}
  void MarkWriting();
  void Hook(KillPoint p) const {
    if (segment_->kill_point_ != nullptr) segment_->kill_point_(p);
  }
  Status RequireRole(Role role, std::string_view what) const;

  Segment* segment_;
  bool writing_ = false;
  std::optional<RecoveryReport> recovery_;
};

// The default path: /run/dracpu/state.v<kLayoutMajor>.shm.
std::string DefaultSegmentPath();

}  // namespace dracpu::shm
