#include "shm-schema/segment.h"

#include <unistd.h>

#include <cerrno>
#include <random>

#include "shm-schema/atomic_copy.h"
#include "shm-schema/checksum.h"
#include "shm-schema/segment_internal.h"

namespace dracpu::shm {

using internal::CString;
using internal::Gen;
using internal::Hex;
using internal::kMaxCapacity;
using internal::PutField;
using internal::SameDescriptor;

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

std::string DefaultSegmentPath() { return "/run/dracpu/" + SegmentFileName(); }

// ------------------------------------------------------------------------------------ Segment

Segment::~Segment() { WakeDeferredWaiters(); }

void Segment::WakeDeferredWaiters() {
  if (!wake_deferred_) return;
  wake_deferred_ = false;
  // After the commit's seq_cst store of the generation, as Commit's own wake: a waiter is
  // either counted here or saw the new generation.
  if (internal::Waiters(header()).load(std::memory_order_seq_cst) != 0) {
    FutexWakeAll(internal::GenWord(header()));
  }
}

Result<std::unique_ptr<Segment>> Segment::Open(const std::string& path,
                                               const OpenOptions& options) {
  const bool writer = options.role == Role::kDraAgent || options.role == Role::kNriAgent;
  if (!writer && options.create_if_missing) {
    return InvalidArgumentError("segment " + path + ": only an agent role can create it");
  }
  bool invalid = false;
  Result<std::unique_ptr<Segment>> opened = OpenExisting(path, options, invalid);
  if (!opened.ok() && opened.status().code() == StatusCode::kNotFound &&
      options.create_if_missing) {
    Result<std::unique_ptr<Segment>> created = CreateNew(path, options, /*replace=*/false);
    if (created.ok() || created.status().code() != StatusCode::kAlreadyExists) return created;
    opened = OpenExisting(path, options, invalid);  // another creator won the race
  }
  if (opened.ok()) return opened;
  const Status why = opened.status();
  if (options.role != Role::kDraAgent || !invalid || !options.rebuild || !options.rebuild(why)) {
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
  const TableLayout layout =
      ComputeTableLayout(options.claims_capacity, options.containers_capacity);
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
  if (options.boottime_ns) seg->boottime_ns_ = options.boottime_ns;
  RETURN_IF_ERROR(seg->Validate());
  RETURN_IF_ERROR(seg->AttachWriter(options));
  return seg;
}

Result<std::unique_ptr<Segment>> Segment::OpenExisting(const std::string& path,
                                                       const OpenOptions& options,
                                                       bool& segment_invalid) {
  segment_invalid = false;
  // Failures of the file's content (not of this process or its peer) make the segment invalid:
  // only those go to the rebuild callback.
  auto invalid = [&segment_invalid](Status st) {
    segment_invalid = true;
    return st;
  };
  const bool writer = options.role != Role::kReader;
  auto seg = std::unique_ptr<Segment>(new Segment());
  seg->path_ = path;
  seg->role_ = options.role;
  seg->kill_point_ = options.kill_point;
  if (options.boottime_ns) seg->boottime_ns_ = options.boottime_ns;
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
    return invalid(DataLossError("segment " + path + " is " +
                                 std::to_string(seg->file_.file_size()) +
                                 " bytes, shorter than its " + std::to_string(kHeaderBytes) +
                                 "-byte header (truncated or not a dracpu segment)"));
  }
  RETURN_IF_ERROR(seg->file_.Map().WithContext("segment " + path));
  if (writer) {
    if (Status st = seg->Validate(); !st.ok()) return invalid(st);
    std::string boot_id;
    if (options.boot_id) {
      ASSIGN_OR_RETURN(boot_id, options.boot_id());
    } else {
      ASSIGN_OR_RETURN(boot_id, ReadBootId());
    }
    // A segment from an earlier boot (possible when the path is not on tmpfs) is not trusted.
    if (boot_id != seg->identity_.boot_id) {
      return invalid(FailedPreconditionError("segment " + path +
                                             " is incompatible: written in boot " +
                                             seg->identity_.boot_id + ", this is boot " + boot_id));
    }
    if (Status st = seg->AttachWriter(options); !st.ok()) {
      // DATA_LOSS from attaching = a record failed its checksum or the mutex is unrecoverable.
      return st.code() == StatusCode::kDataLoss ? invalid(st) : st;
    }
  } else if (Status st = seg->Validate(); !st.ok()) {
    return invalid(st);
  } else if (options.reader_waits) {
    // Best effort (see OpenOptions::reader_waits): without it the reader re-checks on a timer.
    // The page must be of the very file mapped (a rebuild may have replaced the path since).
    Result<ShmFile> page = ShmFile::Open(path, /*writable=*/true);
    if (page.ok() && page->dev() == seg->file_.dev() && page->ino() == seg->file_.ino() &&
        page->Map(kHeaderBytes).ok()) {
      seg->waiter_page_ = std::move(page).value();
    }
  }
  return seg;
}

uint32_t* Segment::WaitersWord() const {
  if (file_.writable()) return &header()->waiters;
  if (waiter_page_.data() == nullptr) return nullptr;
  return &static_cast<SegmentHeader*>(waiter_page_.data())->waiters;
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
        "segment " + path_ + " is incompatible: it has layout version " + std::to_string(h->major) +
        "." + std::to_string(h->minor) + ", this binary reads " + std::to_string(kLayoutMajor) +
        ".x (it is " + std::to_string(kLayoutMajor) + "." + std::to_string(kLayoutMinor) + "); " +
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
  rec.heartbeat_ns = boottime_ns_();
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
      return fail("claims[" + std::to_string(i) +
                      "] uid=" + std::string(CString(claims_[i].uid, kUidBytes)),
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

Result<bool> Segment::RoleLive(Role role) const {
  if (role == Role::kReader) return InvalidArgumentError("the reader role has no liveness");
  if (role == role_) return true;
  return file_.ByteLockedByOther(static_cast<off_t>(role));
}

void Segment::Heartbeat() {
  if (role_ == Role::kReader) return;
  StoreWord(&header()->agents[static_cast<int>(role_)].heartbeat_ns, boottime_ns_());
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

}  // namespace dracpu::shm
