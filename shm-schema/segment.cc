#include "shm-schema/segment.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <unordered_map>

#include "shm-schema/atomic_copy.h"
#include "shm-schema/checksum.h"

namespace dracpu::shm {
namespace {

using Clock = std::chrono::steady_clock;

// Upper bound on the capacities Open accepts from a header (a sanity check, not a policy).
constexpr uint32_t kMaxCapacity = 1u << 20;

std::atomic_ref<uint64_t> Gen(SegmentHeader* h) { return std::atomic_ref<uint64_t>(h->generation); }
std::atomic_ref<uint32_t> Waiters(SegmentHeader* h) { return std::atomic_ref<uint32_t>(h->waiters); }

// The futex word: the low 32 bits of the generation (little-endian, layout.h).
uint32_t* GenWord(SegmentHeader* h) { return reinterpret_cast<uint32_t*>(&h->generation); }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

std::string_view CString(const char* s, size_t n) { return std::string_view(s, ::strnlen(s, n)); }

template <size_t N>
void PutField(char (&field)[N], std::string_view v) {
  std::memset(field, 0, N);
  std::memcpy(field, v.data(), std::min(v.size(), N - 1));
}

bool SameDescriptor(const TableDescriptor& a, const TableDescriptor& b) {
  return a.entries_offset == b.entries_offset && a.index_offset == b.index_offset &&
         a.capacity == b.capacity && a.entry_size == b.entry_size &&
         a.index_slots == b.index_slots;
}

// Backs off while a writer holds the generation odd or keeps changing it.
void Backoff(int attempt) {
  if (attempt < 16) return;
  if (attempt < 64) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}

// Lock-free lookup in an index (reader side: every load atomic, every value bounds-checked since
// it may be torn; the caller validates with the generation). Returns the entry position or -1.
template <typename Entry, size_t KeyBytes>
int64_t ReaderLookup(const uint32_t* index, const Entry* entries, const TableDescriptor& d,
                     std::string_view key, char (Entry::*key_field)[KeyBytes]) {
  if (key.empty() || key.size() >= KeyBytes) return -1;
  const uint32_t mask = d.index_slots - 1;
  uint32_t pos = static_cast<uint32_t>(HashKey(key)) & mask;
  for (uint32_t probe = 0; probe < d.index_slots; ++probe, pos = (pos + 1) & mask) {
    const uint32_t v = LoadWord32(index + pos);
    if (v == 0) return -1;
    if (v > d.capacity) return -1;  // torn: the generation check will reject this read
    const Entry& e = entries[v - 1];
    uint64_t words[KeyBytes / 8];
    CopyWordsOut(words, reinterpret_cast<const uint64_t*>(&(e.*key_field)), KeyBytes / 8);
    const char* stored = reinterpret_cast<const char*>(words);
    if (CString(stored, KeyBytes) == key) return v - 1;
  }
  return -1;
}

}  // namespace

// ----------------------------------------------------------------------------------- Snapshot

const ClaimEntry* Snapshot::FindClaim(std::string_view uid) const {
  for (const auto& c : claims) {
    if (c.Uid() == uid) return &c;
  }
  return nullptr;
}

const ContainerEntry* Snapshot::FindContainer(std::string_view id) const {
  for (const auto& c : containers) {
    if (c.Id() == id) return &c;
  }
  return nullptr;
}

CpuSet ComputeSharedPool(const TopologySummary& topology, const ConfigSummary& config,
                         const std::vector<ClaimEntry>& claims) {
  CpuSet pool = topology.allocatable;
  if ((config.flags & kConfigStrictCpuReservation) == 0) pool |= topology.reserved;
  for (const auto& c : claims) pool -= c.cpus;
  return pool;
}

std::string DefaultSegmentPath() { return "/run/dracpu/" + SegmentFileName(); }

// ------------------------------------------------------------------------------------ Segment

Segment::~Segment() = default;

Result<std::unique_ptr<Segment>> Segment::Open(const std::string& path,
                                               const OpenOptions& options) {
  const bool writer = options.role == Role::kDraAgent || options.role == Role::kNriAgent;
  if (!writer && options.create_if_missing) {
    return InvalidArgumentError("segment " + path + ": only an agent role can create it");
  }
  Result<std::unique_ptr<Segment>> opened = OpenExisting(path, options);
  if (!opened.ok() && opened.status().code() == StatusCode::kNotFound &&
      options.create_if_missing) {
    Result<std::unique_ptr<Segment>> created = CreateNew(path, options, /*replace=*/false);
    if (created.ok() || created.status().code() != StatusCode::kAlreadyExists) return created;
    opened = OpenExisting(path, options);  // another creator won the race
  }
  if (opened.ok()) return opened;
  const Status why = opened.status();
  const bool repairable =
      why.code() == StatusCode::kDataLoss ||
      (why.code() == StatusCode::kFailedPrecondition && why.message().find("incompatible") != std::string::npos);
  if (options.role != Role::kDraAgent || !repairable || !options.rebuild || !options.rebuild(why)) {
    return why;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Segment> fresh, CreateNew(path, options, /*replace=*/true));
  fresh->rebuilt_because_ = why;
  return fresh;
}

Result<std::unique_ptr<Segment>> Segment::CreateNew(const std::string& path,
                                                    const OpenOptions& options, bool replace) {
  if (options.claims_capacity == 0 || options.claims_capacity > kMaxCapacity ||
      options.containers_capacity == 0 || options.containers_capacity > kMaxCapacity) {
    return InvalidArgumentError("segment " + path + ": capacities must be in [1, " +
                                std::to_string(kMaxCapacity) + "]");
  }
  std::string boot_id;
  if (options.boot_id) {
    ASSIGN_OR_RETURN(boot_id, options.boot_id());
  } else {
    ASSIGN_OR_RETURN(boot_id, ReadBootId());
  }
  const TableLayout layout = ComputeTableLayout(options.claims_capacity, options.containers_capacity);
  std::random_device rd;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd());
  ASSIGN_OR_RETURN(ShmFile file, ShmFile::CreateExclusive(tmp, layout.segment_size));
  Status st = file.Map();
  if (st.ok()) st = file.LockByte(static_cast<off_t>(options.role));  // ours before anyone sees it
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st.WithContext("segment " + tmp);
  }
  auto* h = static_cast<SegmentHeader*>(file.data());
  h->magic = kMagic;
  h->major = kLayoutMajor;
  h->minor = kLayoutMinor;
  h->segment_size = layout.segment_size;
  h->header_size = kHeaderBytes;
  h->claims = layout.claims;
  h->containers = layout.containers;
  PutField(h->boot_id, boot_id);
  PutField(h->node_name, options.node_name);
  h->created_time_ns = RealtimeNs();
  h->identity_checksum = HeaderIdentityChecksum(*h);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  const int rc = pthread_mutex_init(&h->lock.mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) {
    ::unlink(tmp.c_str());
    return ErrnoStatus("segment " + path + ": pthread_mutex_init", rc);
  }
  // Publish: link() refuses to replace an existing segment (another creator won the race);
  // rename() replaces a corrupt one deliberately.
  if (replace) {
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return ErrnoStatus("segment " + path + ": rename new segment into place", err);
    }
  } else {
    const int rc_link = ::link(tmp.c_str(), path.c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (rc_link != 0) return ErrnoStatus("segment " + path + ": publish new segment", err);
  }
  // Attach the new file through the normal path (the role lock is already ours on this inode).
  auto seg = std::unique_ptr<Segment>(new Segment());
  seg->path_ = path;
  seg->role_ = options.role;
  seg->file_ = std::move(file);
  seg->kill_point_ = options.kill_point;
  RETURN_IF_ERROR(seg->Validate());
  RETURN_IF_ERROR(seg->AttachWriter(options));
  return seg;
}

Result<std::unique_ptr<Segment>> Segment::OpenExisting(const std::string& path,
                                                       const OpenOptions& options) {
  const bool writer = options.role != Role::kReader;
  auto seg = std::unique_ptr<Segment>(new Segment());
  seg->path_ = path;
  seg->role_ = options.role;
  seg->kill_point_ = options.kill_point;
  ASSIGN_OR_RETURN(seg->file_, ShmFile::Open(path, writer));
  if (writer) {
    const Status locked = seg->file_.LockByte(static_cast<off_t>(options.role));
    if (!locked.ok()) {
      if (locked.code() != StatusCode::kUnavailable) return locked.WithContext("segment " + path);
      return FailedPreconditionError(
          "segment " + path + ": another " + std::string(RoleName(options.role)) +
          " holds the role lock (F_OFD_SETLK on byte " +
          std::to_string(static_cast<int>(options.role)) +
          "); only one per node may run, refusing to start a second one");
    }
  }
  if (seg->file_.file_size() < kHeaderBytes) {
    return DataLossError("segment " + path + " is " + std::to_string(seg->file_.file_size()) +
                         " bytes, shorter than its " + std::to_string(kHeaderBytes) +
                         "-byte header (truncated or not a dracpu segment)");
  }
  RETURN_IF_ERROR(seg->file_.Map().WithContext("segment " + path));
  if (writer) {
    // A segment from an earlier boot (possible when the path is not on tmpfs) is not trusted.
    RETURN_IF_ERROR(seg->Validate());
    std::string boot_id;
    if (options.boot_id) {
      ASSIGN_OR_RETURN(boot_id, options.boot_id());
    } else {
      ASSIGN_OR_RETURN(boot_id, ReadBootId());
    }
    if (boot_id != seg->identity_.boot_id) {
      return FailedPreconditionError("segment " + path + " is incompatible: written in boot " +
                                     seg->identity_.boot_id + ", this is boot " + boot_id);
    }
    RETURN_IF_ERROR(seg->AttachWriter(options));
  } else {
    RETURN_IF_ERROR(seg->Validate());
  }
  return seg;
}

Status Segment::Validate() const {
  const SegmentHeader* h = header();
  const uint64_t size = file_.file_size();
  // The first 16 bytes (magic, major, minor) are frozen across every major version.
  if (h->magic != kMagic) {
    return DataLossError("segment " + path_ + ": bad magic " + Hex(h->magic) + ", expected " +
                         Hex(kMagic) + " (not a dracpu segment, or overwritten)");
  }
  if (h->major != kLayoutMajor) {
    return FailedPreconditionError(
        "segment " + path_ + " is incompatible: it has layout version " +
        std::to_string(h->major) + "." + std::to_string(h->minor) + ", this binary reads " +
        std::to_string(kLayoutMajor) + ".x (it is " + std::to_string(kLayoutMajor) + "." +
        std::to_string(kLayoutMinor) + "); " +
        (h->major > kLayoutMajor ? "the segment is newer" : "the segment is older") +
        " and a major version never mixes");
  }
  const uint64_t sum = HeaderIdentityChecksum(*h);
  if (sum != h->identity_checksum) {
    return DataLossError("segment " + path_ + ": header identity checksum mismatch (stored " +
                         Hex(h->identity_checksum) + ", computed " + Hex(sum) + ")");
  }
  if (h->header_size != kHeaderBytes) {
    return DataLossError("segment " + path_ + ": header_size " + std::to_string(h->header_size) +
                         ", layout " + std::to_string(kLayoutMajor) + " has " +
                         std::to_string(kHeaderBytes));
  }
  if (h->segment_size != size) {
    return DataLossError("segment " + path_ + ": header says " + std::to_string(h->segment_size) +
                         " bytes but the file is " + std::to_string(size) +
                         " bytes (truncated or extended)");
  }
  const uint32_t cc = h->claims.capacity;
  const uint32_t kc = h->containers.capacity;
  if (cc == 0 || cc > kMaxCapacity || kc == 0 || kc > kMaxCapacity) {
    return DataLossError("segment " + path_ + ": capacities " + std::to_string(cc) + " claims, " +
                         std::to_string(kc) + " containers are out of range");
  }
  const TableLayout want = ComputeTableLayout(cc, kc);
  if (!SameDescriptor(want.claims, h->claims) || !SameDescriptor(want.containers, h->containers) ||
      want.segment_size != h->segment_size) {
    return DataLossError("segment " + path_ + ": table offsets/sizes do not match layout " +
                         std::to_string(kLayoutMajor) + " for " + std::to_string(cc) +
                         " claims and " + std::to_string(kc) + " containers");
  }
  auto* self = const_cast<Segment*>(this);
  self->identity_.major = h->major;
  self->identity_.minor = LoadWord32(&h->minor);
  self->identity_.segment_size = h->segment_size;
  self->identity_.claims_capacity = cc;
  self->identity_.containers_capacity = kc;
  self->identity_.boot_id = CString(h->boot_id, sizeof h->boot_id);
  self->identity_.node_name = CString(h->node_name, sizeof h->node_name);
  self->identity_.created_time_ns = h->created_time_ns;
  self->claims_desc_ = want.claims;
  self->containers_desc_ = want.containers;
  self->claims_ = reinterpret_cast<ClaimEntry*>(base() + want.claims.entries_offset);
  self->claims_index_ = reinterpret_cast<uint32_t*>(base() + want.claims.index_offset);
  self->containers_ = reinterpret_cast<ContainerEntry*>(base() + want.containers.entries_offset);
  self->containers_index_ = reinterpret_cast<uint32_t*>(base() + want.containers.index_offset);
  return Status::Ok();
}

Status Segment::CheckPeerNamespace() const {
  const Role peer = role_ == Role::kDraAgent ? Role::kNriAgent : Role::kDraAgent;
  const AgentRecord& rec = header()->agents[static_cast<int>(peer)];
  const uint64_t peer_ns = LoadWord(&rec.pid_ns_inode);
  if (peer_ns == 0 || peer_ns == pid_ns_inode_) return Status::Ok();
  ASSIGN_OR_RETURN(const bool live, RoleLive(peer));
  if (!live) return Status::Ok();
  const uint32_t pid = LoadWord32(&rec.pid);
  return FailedPreconditionError(
      "segment " + path_ + ": the " + std::string(RoleName(peer)) + " (pid " + std::to_string(pid) +
      ") is live in PID namespace " + std::to_string(peer_ns) + " but this " +
      std::string(RoleName(role_)) + " is in PID namespace " + std::to_string(pid_ns_inode_) +
      "; the robust mutex identifies owners by thread id, so both agents must share one PID "
      "namespace (shareProcessNamespace: true)");
}

Status Segment::AttachWriter(const OpenOptions& options) {
  if (options.pid_namespace_inode) {
    ASSIGN_OR_RETURN(pid_ns_inode_, options.pid_namespace_inode());
  } else {
    ASSIGN_OR_RETURN(pid_ns_inode_, ReadPidNamespaceInode());
  }
  RETURN_IF_ERROR(CheckPeerNamespace());
  ASSIGN_OR_RETURN(WriteTransaction txn, Begin());
  open_recovery_ = txn.recovery();
  if (!open_recovery_) {
    // Nobody died holding the lock, so every used record must verify: a failure is corruption.
    RETURN_IF_ERROR(VerifyRecordsLocked());
  }
  txn.MarkWriting();
  SegmentHeader* h = header();
  AgentRecord rec{};
  CopyOut(rec, h->agents[static_cast<int>(role_)]);
  rec.pid = static_cast<uint32_t>(::getpid());
  rec.role = static_cast<uint32_t>(role_);
  rec.pid_ns_inode = pid_ns_inode_;
  rec.start_time_ns = RealtimeNs();
  rec.heartbeat_ns = BoottimeNs();
  rec.attach_count += 1;
  PutField(rec.version, options.version);
  CopyIn(h->agents[static_cast<int>(role_)], rec);
  if (LoadWord32(&h->minor) < kLayoutMinor) {
    // A newer minor writes here now; its fields default to zero in older records.
    StoreWord32(&h->minor, kLayoutMinor);
    identity_.minor = kLayoutMinor;
  }
  txn.Commit();
  return Status::Ok();
}

Status Segment::VerifyRecordsLocked() const {
  const SegmentHeader* h = header();
  auto fail = [&](const std::string& what, const Status& st) {
    return DataLossError("segment " + path_ + ": " + what + ": " + st.message());
  };
  if (h->claim_count > claims_desc_.capacity) {
    return DataLossError("segment " + path_ + ": claim_count " + std::to_string(h->claim_count) +
                         " exceeds capacity " + std::to_string(claims_desc_.capacity));
  }
  if (h->container_count > containers_desc_.capacity) {
    return DataLossError("segment " + path_ + ": container_count " +
                         std::to_string(h->container_count) + " exceeds capacity " +
                         std::to_string(containers_desc_.capacity));
  }
  for (uint32_t i = 0; i < h->claim_count; ++i) {
    const Status st = CheckClaimEntry(claims_[i]);
    if (!st.ok()) {
      return fail("claims[" + std::to_string(i) + "] uid=" +
                      std::string(CString(claims_[i].uid, kUidBytes)),
                  st);
    }
  }
  for (uint32_t i = 0; i < h->container_count; ++i) {
    const Status st = CheckContainerEntry(containers_[i]);
    if (!st.ok()) {
      return fail("containers[" + std::to_string(i) + "] id=" +
                      std::string(CString(containers_[i].container_id, kContainerIdBytes)),
                  st);
    }
  }
  auto check_record = [&](const auto& rec, const char* what) -> Status {
    if (rec.updated_time_ns == 0 && rec.checksum == 0) return Status::Ok();  // never written
    const uint64_t sum = RecordChecksum(rec);
    if (sum != rec.checksum) {
      return DataLossError("segment " + path_ + ": " + what + " checksum mismatch (stored " +
                           Hex(rec.checksum) + ", computed " + Hex(sum) + ")");
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(check_record(h->config, "config summary"));
  RETURN_IF_ERROR(check_record(h->topology, "topology summary"));
  RETURN_IF_ERROR(check_record(h->shared_pool, "shared pool"));
  return Status::Ok();
}

bool Segment::IsStale() const { return !PathNamesInode(path_, file_.dev(), file_.ino()); }

uint64_t Segment::generation() const {
  return Gen(header()).load(std::memory_order_acquire);
}

Result<bool> Segment::RoleLive(Role role) const {
  if (role == Role::kReader) return InvalidArgumentError("the reader role has no liveness");
  if (role == role_) return true;
  return file_.ByteLockedByOther(static_cast<off_t>(role));
}

Status Segment::ReadSnapshotInto(Snapshot& out, const SnapshotOptions& options) const {
  SegmentHeader* h = header();
  out.identity = identity_;
  out.identity.minor = LoadWord32(&h->minor);
  const auto deadline = Clock::now() + options.timeout;
  for (int attempt = 0;; ++attempt) {
    const uint64_t g1 = Gen(h).load(std::memory_order_acquire);
    const bool timed_out = (attempt & 63) == 63 && Clock::now() > deadline;
    if ((g1 & 1) == 0 || (timed_out && options.allow_inconsistent)) {
      for (int r = 0; r < kAgentRoles; ++r) CopyOut(out.agents[r], h->agents[r]);
      CopyOut(out.config, h->config);
      CopyOut(out.topology, h->topology);
      CopyOut(out.shared_pool, h->shared_pool);
      if (options.claims) {
        const uint32_t n = std::min(LoadWord32(&h->claim_count), claims_desc_.capacity);
        out.claims.resize(n);
        CopyWordsOut(reinterpret_cast<uint64_t*>(out.claims.data()),
                     reinterpret_cast<const uint64_t*>(claims_), n * sizeof(ClaimEntry) / 8);
      } else {
        out.claims.clear();
      }
      if (options.containers) {
        const uint32_t n = std::min(LoadWord32(&h->container_count), containers_desc_.capacity);
        out.containers.resize(n);
        CopyWordsOut(reinterpret_cast<uint64_t*>(out.containers.data()),
                     reinterpret_cast<const uint64_t*>(containers_),
                     n * sizeof(ContainerEntry) / 8);
      } else {
        out.containers.clear();
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      const uint64_t g2 = Gen(h).load(std::memory_order_relaxed);
      if (g1 == g2 && (g1 & 1) == 0) {
        out.generation = g1;
        out.consistent = true;
        return Status::Ok();
      }
      if (timed_out && options.allow_inconsistent) {
        out.generation = g2;
        out.consistent = false;
        return Status::Ok();
      }
    }
    if (timed_out) {
      return UnavailableError("segment " + path_ + ": no consistent snapshot within " +
                              std::to_string(options.timeout.count()) + " ms (generation " +
                              std::to_string(g1) +
                              (g1 & 1 ? ", odd: a writer died mid-write or is stuck; the next "
                                        "writer to lock repairs it)"
                                      : ", writes keep interrupting the copy)"));
    }
    Backoff(attempt);
  }
}

Result<Snapshot> Segment::ReadSnapshot(const SnapshotOptions& options) const {
  Snapshot s;
  RETURN_IF_ERROR(ReadSnapshotInto(s, options));
  return s;
}

namespace {

template <typename Entry, size_t KeyBytes>
Result<std::optional<Entry>> SeqlockFind(SegmentHeader* h, const uint32_t* index,
                                         const Entry* entries, const TableDescriptor& d,
                                         std::string_view key, char (Entry::*key_field)[KeyBytes],
                                         std::chrono::milliseconds timeout, const std::string& path) {
  const auto deadline = Clock::now() + timeout;
  for (int attempt = 0;; ++attempt) {
    const uint64_t g1 = Gen(h).load(std::memory_order_acquire);
    if ((g1 & 1) == 0) {
      const int64_t pos = ReaderLookup(index, entries, d, key, key_field);
      std::optional<Entry> found;
      if (pos >= 0) {
        found.emplace();
        CopyOut(*found, entries[pos]);
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      if (Gen(h).load(std::memory_order_relaxed) == g1) return found;
    }
    if ((attempt & 63) == 63 && Clock::now() > deadline) {
      return UnavailableError("segment " + path + ": lookup of " + std::string(key) +
                              " found no stable generation within " +
                              std::to_string(timeout.count()) + " ms (generation " +
                              std::to_string(g1) + ")");
    }
    Backoff(attempt);
  }
}

}  // namespace

Result<std::optional<ClaimEntry>> Segment::FindClaim(std::string_view uid,
                                                     std::chrono::milliseconds timeout) const {
  return SeqlockFind(header(), claims_index_, claims_, claims_desc_, uid, &ClaimEntry::uid,
                     timeout, path_);
}

Result<std::optional<ContainerEntry>> Segment::FindContainer(
    std::string_view id, std::chrono::milliseconds timeout) const {
  return SeqlockFind(header(), containers_index_, containers_, containers_desc_, id,
                     &ContainerEntry::container_id, timeout, path_);
}

Result<uint64_t> Segment::WaitForChange(uint64_t seen, std::chrono::nanoseconds timeout) const {
  SegmentHeader* h = header();
  const auto deadline = Clock::now() + timeout;
  const bool registered = file_.writable();
  if (registered) Waiters(h).fetch_add(1, std::memory_order_seq_cst);
  Result<uint64_t> result = DeadlineExceededError("");
  for (;;) {
    const uint64_t g = Gen(h).load(std::memory_order_seq_cst);
    if ((g & 1) == 0 && g != seen) {
      result = g;
      break;
    }
    const auto left = deadline - Clock::now();
    if (left <= std::chrono::nanoseconds(0)) {
      result = DeadlineExceededError("segment " + path_ + ": no change from generation " +
                                     std::to_string(seen) + " within " +
                                     std::to_string(timeout.count() / 1000000) + " ms");
      break;
    }
    const std::chrono::nanoseconds wait =
        registered ? std::chrono::duration_cast<std::chrono::nanoseconds>(left)
                   : std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(20));
    const Status st = FutexWait(GenWord(h), static_cast<uint32_t>(g), wait);
    if (!st.ok() && st.code() != StatusCode::kDeadlineExceeded) {
      result = st;
      break;
    }
  }
  if (registered) Waiters(h).fetch_sub(1, std::memory_order_seq_cst);
  return result;
}

void Segment::Heartbeat() {
  if (role_ == Role::kReader) return;
  StoreWord(&header()->agents[static_cast<int>(role_)].heartbeat_ns, BoottimeNs());
}

Result<WriteTransaction> Segment::Begin() {
  if (role_ == Role::kReader) {
    return FailedPreconditionError("segment " + path_ + " is open read-only (reader role)");
  }
  RETURN_IF_ERROR(CheckPeerNamespace());
  SegmentHeader* h = header();
  const int rc = pthread_mutex_lock(&h->lock.mutex);
  WriteTransaction txn(this);
  if (rc == EOWNERDEAD || (rc == 0 && (Gen(h).load(std::memory_order_relaxed) & 1) != 0)) {
    // The previous holder died (or, without EOWNERDEAD, left a torn write behind).
    Result<RecoveryReport> report = Repair(rc == EOWNERDEAD);
    if (rc == EOWNERDEAD) pthread_mutex_consistent(&h->lock.mutex);
    if (!report.ok()) {
      pthread_mutex_unlock(&h->lock.mutex);
      txn.segment_ = nullptr;
      return report.status();
    }
    txn.recovery_ = std::move(report).value();
  } else if (rc == ENOTRECOVERABLE) {
    txn.segment_ = nullptr;
    return DataLossError("segment " + path_ +
                         ": mutex is not recoverable (a previous owner died and the recovery did "
                         "not complete); the segment must be rebuilt");
  } else if (rc != 0) {
    txn.segment_ = nullptr;
    return ErrnoStatus("segment " + path_ + ": pthread_mutex_lock", rc);
  }
  return txn;
}

void Segment::RebuildClaimsIndexLocked() {
  const uint32_t mask = claims_desc_.index_slots - 1;
  for (uint32_t i = 0; i < claims_desc_.index_slots; ++i) StoreWord32(&claims_index_[i], 0);
  for (uint32_t i = 0; i < header()->claim_count; ++i) {
    uint32_t pos = static_cast<uint32_t>(HashKey(claims_[i].Uid())) & mask;
    while (claims_index_[pos] != 0) pos = (pos + 1) & mask;
    StoreWord32(&claims_index_[pos], i + 1);
  }
}

void Segment::RebuildContainersIndexLocked() {
  const uint32_t mask = containers_desc_.index_slots - 1;
  for (uint32_t i = 0; i < containers_desc_.index_slots; ++i) StoreWord32(&containers_index_[i], 0);
  for (uint32_t i = 0; i < header()->container_count; ++i) {
    uint32_t pos = static_cast<uint32_t>(HashKey(containers_[i].Id())) & mask;
    while (containers_index_[pos] != 0) pos = (pos + 1) & mask;
    StoreWord32(&containers_index_[pos], i + 1);
  }
}

namespace {

// Compacts table [0, *count): drops entries failing `check` or repeating an earlier key.
template <typename Entry, typename Check, typename Key>
void CompactTable(Entry* entries, uint32_t* count, uint32_t capacity, const char* table,
                  Check check, Key key, std::vector<std::string>& actions) {
  uint32_t n = *count;
  if (n > capacity) {
    actions.push_back(std::string(table) + ": count " + std::to_string(n) + " exceeds capacity " +
                      std::to_string(capacity) + "; clamped");
    n = capacity;
  }
  std::unordered_map<std::string, uint32_t> seen;
  uint32_t keep = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Entry& e = entries[i];
    const std::string k(key(e));
    const Status st = check(e);
    if (!st.ok()) {
      actions.push_back(std::string(table) + "[" + std::to_string(i) + "] key=" + k + ": " +
                        st.message() + "; dropped");
      continue;
    }
    auto [it, inserted] = seen.emplace(k, i);
    if (!inserted) {
      actions.push_back(std::string(table) + "[" + std::to_string(i) + "] key=" + k +
                        ": duplicate of entry " + std::to_string(it->second) +
                        " (an interrupted move); dropped");
      continue;
    }
    if (keep != i) CopyIn(entries[keep], e);
    ++keep;
  }
  StoreWord32(count, keep);
}

}  // namespace

Result<RecoveryReport> Segment::Repair(bool owner_died) {
  SegmentHeader* h = header();
  RecoveryReport report;
  report.owner_died = owner_died;
  report.generation_found = Gen(h).load(std::memory_order_relaxed);
  report.torn = (report.generation_found & 1) != 0;
  // Repairing is a write: keep (or make) the generation odd until it is done.
  if (!report.torn) {
    Gen(h).store(report.generation_found + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  if (report.torn) {
    report.actions.push_back("generation " + std::to_string(report.generation_found) +
                             " was odd: a write was interrupted; checking every record");
  }
  CompactTable(claims_, &h->claim_count, claims_desc_.capacity, "claims", CheckClaimEntry,
               [](const ClaimEntry& e) { return std::string(CString(e.uid, kUidBytes)); },
               report.actions);
  CompactTable(containers_, &h->container_count, containers_desc_.capacity, "containers",
               CheckContainerEntry,
               [](const ContainerEntry& e) {
                 return std::string(CString(e.container_id, kContainerIdBytes));
               },
               report.actions);
  RebuildClaimsIndexLocked();
  RebuildContainersIndexLocked();
  auto reset_if_bad = [&](auto& rec, const char* what) {
    if (rec.updated_time_ns == 0 && rec.checksum == 0) return;
    const uint64_t sum = RecordChecksum(rec);
    if (sum != rec.checksum) {
      report.actions.push_back(std::string(what) + ": checksum mismatch (stored " +
                               Hex(rec.checksum) + ", computed " + Hex(sum) +
                               "); reset to unset, its writer must publish it again");
      std::remove_reference_t<decltype(rec)> zero{};
      CopyIn(rec, zero);
    }
  };
  reset_if_bad(h->config, "config summary");
  reset_if_bad(h->topology, "topology summary");
  reset_if_bad(h->shared_pool, "shared pool");
  const uint64_t odd = Gen(h).load(std::memory_order_relaxed);
  Gen(h).store(odd + 1, std::memory_order_seq_cst);
  if (Waiters(h).load(std::memory_order_seq_cst) != 0) FutexWakeAll(GenWord(h));
  return report;
}

// --------------------------------------------------------------------------- WriteTransaction

WriteTransaction::WriteTransaction(WriteTransaction&& other) noexcept
    : segment_(std::exchange(other.segment_, nullptr)),
      writing_(other.writing_),
      recovery_(std::move(other.recovery_)) {}

WriteTransaction::~WriteTransaction() { (void)Commit(); }

void WriteTransaction::MarkWriting() {
  if (writing_) return;
  writing_ = true;
  SegmentHeader* h = segment_->header();
  const uint64_t g = Gen(h).load(std::memory_order_relaxed);
  Gen(h).store(g + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  Hook(KillPoint::kAfterGenerationOdd);
}

uint64_t WriteTransaction::Commit() {
  if (segment_ == nullptr) return 0;
  SegmentHeader* h = segment_->header();
  uint64_t published = Gen(h).load(std::memory_order_relaxed);
  if (writing_) {
    Hook(KillPoint::kBeforeGenerationEven);
    const uint64_t g = Gen(h).load(std::memory_order_relaxed);
    // seq_cst store then seq_cst load of waiters: pairs with WaitForChange's increment-then-load
    // so that a waiter is either woken or sees the new generation.
    Gen(h).store(g + 1, std::memory_order_seq_cst);
    published = g + 1;
    Hook(KillPoint::kAfterGenerationEven);
    if (Waiters(h).load(std::memory_order_seq_cst) != 0) FutexWakeAll(GenWord(h));
  }
  pthread_mutex_unlock(&h->lock.mutex);
  segment_ = nullptr;
  return published;
}

Status WriteTransaction::RequireRole(Role role, std::string_view what) const {
  if (segment_ == nullptr) return FailedPreconditionError("transaction already committed");
  if (segment_->role_ != role) {
    return FailedPreconditionError(std::string(what) + " is written only by the " +
                                   std::string(RoleName(role)) + ", not the " +
                                   std::string(RoleName(segment_->role_)));
  }
  return Status::Ok();
}

namespace {

// Writer-side index helpers (the writer holds the lock: plain reads of shared data are not racing
// with any other writer; stores stay atomic for the lock-free readers).
template <typename Entry, typename KeyOf>
int64_t WriterFindSlot(const uint32_t* index, const Entry* entries, const TableDescriptor& d,
                       std::string_view key, KeyOf key_of, uint32_t* slot) {
  const uint32_t mask = d.index_slots - 1;
  uint32_t pos = static_cast<uint32_t>(HashKey(key)) & mask;
  for (uint32_t probe = 0; probe < d.index_slots; ++probe, pos = (pos + 1) & mask) {
    const uint32_t v = index[pos];
    if (v == 0) {
      *slot = pos;
      return -1;
    }
    if (key_of(entries[v - 1]) == key) {
      *slot = pos;
      return v - 1;
    }
  }
  *slot = d.index_slots;  // full (cannot happen: slots >= 2 * capacity)
  return -1;
}

// Backward-shift deletion of `slot` from a linear-probing index.
template <typename Entry, typename KeyOf>
void IndexErase(uint32_t* index, const Entry* entries, const TableDescriptor& d, uint32_t slot,
                KeyOf key_of) {
  const uint32_t mask = d.index_slots - 1;
  uint32_t hole = slot;
  uint32_t pos = (slot + 1) & mask;
  for (;;) {
    const uint32_t v = index[pos];
    if (v == 0) break;
    const uint32_t home = static_cast<uint32_t>(HashKey(key_of(entries[v - 1]))) & mask;
    // Move v into the hole when its home is not in (hole, pos] cyclically.
    const bool in_range = hole <= pos ? (home > hole && home <= pos) : (home > hole || home <= pos);
    if (!in_range) {
      StoreWord32(&index[hole], v);
      hole = pos;
    }
    pos = (pos + 1) & mask;
  }
  StoreWord32(&index[hole], 0);
}

template <typename Entry>
void WriteEntry(Entry& shared, const Entry& local, const WriteTransaction* txn,
                void (*hook)(const WriteTransaction*, KillPoint)) {
  constexpr size_t kWords = sizeof(Entry) / 8;
  const auto* src = reinterpret_cast<const uint64_t*>(&local);
  auto* dst = reinterpret_cast<uint64_t*>(&shared);
  CopyWordsIn(dst, src, kWords / 2);
  hook(txn, KillPoint::kMidRecord);
  CopyWordsIn(dst + kWords / 2, src + kWords / 2, kWords - kWords / 2);
}

}  // namespace

// The generic table operations, shared by claims and containers.
struct TableOps {
  template <typename Entry, typename KeyOf>
  static Status Upsert(WriteTransaction& txn, Entry entry, Entry* entries, uint32_t* index,
                       uint32_t* count, const TableDescriptor& d, KeyOf key_of,
                       const char* table) {
    const std::string_view key = key_of(entry);
    uint32_t slot = 0;
    const int64_t found = WriterFindSlot(index, entries, d, key, key_of, &slot);
    auto hook = [](const WriteTransaction* t, KillPoint p) { t->Hook(p); };
    if (found >= 0) {
      txn.MarkWriting();
      WriteEntry(entries[found], entry, &txn, hook);
      txn.Hook(KillPoint::kAfterRecord);
      return Status::Ok();
    }
    const uint32_t n = *count;
    if (n >= d.capacity || slot >= d.index_slots) {
      return ResourceExhaustedError(std::string(table) + " table is full (" +
                                    std::to_string(d.capacity) + " entries); cannot add " +
                                    std::string(key));
    }
    txn.MarkWriting();
    WriteEntry(entries[n], entry, &txn, hook);
    txn.Hook(KillPoint::kAfterRecord);
    StoreWord32(count, n + 1);
    txn.Hook(KillPoint::kAfterCount);
    StoreWord32(&index[slot], n + 1);
    txn.Hook(KillPoint::kAfterIndex);
    return Status::Ok();
  }

  template <typename Entry, typename KeyOf>
  static Result<bool> Remove(WriteTransaction& txn, std::string_view key, Entry* entries,
                             uint32_t* index, uint32_t* count, const TableDescriptor& d,
                             KeyOf key_of) {
    uint32_t slot = 0;
    const int64_t found = WriterFindSlot(index, entries, d, key, key_of, &slot);
    if (found < 0) return false;
    txn.MarkWriting();
    const uint32_t i = static_cast<uint32_t>(found);
    const uint32_t last = *count - 1;
    IndexErase(index, entries, d, slot, key_of);
    txn.Hook(KillPoint::kAfterIndex);
    if (i != last) {
      // Move the last entry into the hole and repoint its index slot.
      uint32_t last_slot = 0;
      WriterFindSlot(index, entries, d, key_of(entries[last]), key_of, &last_slot);
      auto hook = [](const WriteTransaction* t, KillPoint p) { t->Hook(p); };
      WriteEntry(entries[i], entries[last], &txn, hook);
      txn.Hook(KillPoint::kAfterRecord);
      StoreWord32(&index[last_slot], i + 1);
    }
    StoreWord32(count, last);
    txn.Hook(KillPoint::kAfterCount);
    return true;
  }
};

namespace {
std::string_view ClaimKey(const ClaimEntry& e) { return e.Uid(); }
std::string_view ContainerKey(const ContainerEntry& e) { return e.Id(); }
}  // namespace

Status WriteTransaction::UpsertClaim(const ClaimSpec& spec) {
  ASSIGN_OR_RETURN(ClaimEntry entry, EncodeClaim(spec));
  return UpsertClaimEntry(entry);
}

Status WriteTransaction::UpsertClaimEntry(const ClaimEntry& entry) {
  RETURN_IF_ERROR(RequireRole(Role::kDraAgent, "the claims table"));
  ClaimEntry e = entry;
  e.checksum = RecordChecksum(e);
  if (Status st = CheckClaimFields(e); !st.ok()) return st.WithContext("claim " + std::string(e.Uid()));
  Segment* s = segment_;
  return TableOps::Upsert(*this, e, s->claims_, s->claims_index_, &s->header()->claim_count,
                          s->claims_desc_, ClaimKey, "claims");
}

Result<bool> WriteTransaction::RemoveClaim(std::string_view uid) {
  RETURN_IF_ERROR(RequireRole(Role::kDraAgent, "the claims table"));
  Segment* s = segment_;
  return TableOps::Remove(*this, uid, s->claims_, s->claims_index_, &s->header()->claim_count,
                          s->claims_desc_, ClaimKey);
}

std::optional<ClaimEntry> WriteTransaction::FindClaim(std::string_view uid) const {
  Segment* s = segment_;
  uint32_t slot = 0;
  const int64_t i = WriterFindSlot(s->claims_index_, s->claims_, s->claims_desc_, uid, ClaimKey, &slot);
  if (i < 0) return std::nullopt;
  return s->claims_[i];
}

uint32_t WriteTransaction::claim_count() const { return segment_->header()->claim_count; }
const ClaimEntry& WriteTransaction::claim_at(uint32_t i) const { return segment_->claims_[i]; }

CpuSet WriteTransaction::ClaimedCpus(std::string_view except_uid) const {
  CpuSet all;
  for (uint32_t i = 0; i < claim_count(); ++i) {
    const ClaimEntry& e = segment_->claims_[i];
    if (!except_uid.empty() && e.Uid() == except_uid) continue;
    all |= e.cpus;
  }
  return all;
}

Status WriteTransaction::SetConfig(const ConfigSummary& config) {
  RETURN_IF_ERROR(RequireRole(Role::kDraAgent, "the config summary"));
  ConfigSummary c = config;
  c.updated_time_ns = RealtimeNs();
  c.checksum = RecordChecksum(c);
  MarkWriting();
  CopyIn(segment_->header()->config, c);
  return Status::Ok();
}

Status WriteTransaction::SetTopology(const TopologySummary& topology) {
  RETURN_IF_ERROR(RequireRole(Role::kDraAgent, "the topology summary"));
  TopologySummary t = topology;
  t.updated_time_ns = RealtimeNs();
  t.checksum = RecordChecksum(t);
  MarkWriting();
  CopyIn(segment_->header()->topology, t);
  return Status::Ok();
}

Status WriteTransaction::UpsertContainer(const ContainerSpec& spec) {
  ASSIGN_OR_RETURN(ContainerEntry entry, EncodeContainer(spec));
  return UpsertContainerEntry(entry);
}

Status WriteTransaction::UpsertContainerEntry(const ContainerEntry& entry) {
  RETURN_IF_ERROR(RequireRole(Role::kNriAgent, "the containers table"));
  ContainerEntry e = entry;
  e.checksum = RecordChecksum(e);
  if (Status st = CheckContainerFields(e); !st.ok()) {
    return st.WithContext("container " + std::string(e.Id()));
  }
  Segment* s = segment_;
  return TableOps::Upsert(*this, e, s->containers_, s->containers_index_,
                          &s->header()->container_count, s->containers_desc_, ContainerKey,
                          "containers");
}

Result<bool> WriteTransaction::RemoveContainer(std::string_view id) {
  RETURN_IF_ERROR(RequireRole(Role::kNriAgent, "the containers table"));
  Segment* s = segment_;
  return TableOps::Remove(*this, id, s->containers_, s->containers_index_,
                          &s->header()->container_count, s->containers_desc_, ContainerKey);
}

std::optional<ContainerEntry> WriteTransaction::FindContainer(std::string_view id) const {
  Segment* s = segment_;
  uint32_t slot = 0;
  const int64_t i = WriterFindSlot(s->containers_index_, s->containers_, s->containers_desc_, id,
                                   ContainerKey, &slot);
  if (i < 0) return std::nullopt;
  return s->containers_[i];
}

uint32_t WriteTransaction::container_count() const { return segment_->header()->container_count; }
const ContainerEntry& WriteTransaction::container_at(uint32_t i) const {
  return segment_->containers_[i];
}

Status WriteTransaction::SetSharedPool(const CpuSet& cpus) {
  RETURN_IF_ERROR(RequireRole(Role::kNriAgent, "the shared pool"));
  SharedPoolRecord r{};
  r.cpus = cpus;
  r.updated_time_ns = RealtimeNs();
  r.checksum = RecordChecksum(r);
  MarkWriting();
  CopyIn(segment_->header()->shared_pool, r);
  return Status::Ok();
}

const TopologySummary& WriteTransaction::topology() const { return segment_->header()->topology; }
const ConfigSummary& WriteTransaction::config() const { return segment_->header()->config; }

}  // namespace dracpu::shm
