// WriteTransaction and the generic dense-table + index operations behind it.
#include <algorithm>
#include <span>

#include "shm-schema/atomic_copy.h"
#include "shm-schema/checksum.h"
#include "shm-schema/segment.h"
#include "shm-schema/segment_internal.h"

namespace dracpu::shm {

using internal::Gen;
using internal::GenWord;
using internal::Waiters;

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

uint64_t WriteTransaction::Commit(WakeWaiters wake) {
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
    if (wake == WakeWaiters::kDeferred) {
      segment_->wake_deferred_ = true;
    } else {
      segment_->wake_deferred_ = false;
      if (Waiters(h).load(std::memory_order_seq_cst) != 0) FutexWakeAll(GenWord(h));
    }
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

// Saves `current` (entry `position` of `table`) in the undo record before it is overwritten.
template <typename Entry>
void SaveUndo(SegmentHeader* h, uint32_t table, uint32_t position, const Entry& current) {
  UndoRecord& u = h->undo;
  StoreWord(&u.generation, 0);  // invalid while it is being written
  CopyWordsIn(u.entry_words, reinterpret_cast<const uint64_t*>(&current), sizeof(Entry) / 8);
  StoreWord32(&u.table, table);
  StoreWord32(&u.position, position);
  StoreWord(&u.generation, Gen(h).load(std::memory_order_relaxed));
}

// The generic table operations, shared by claims and containers.
struct TableOps {
  // Replaces entry `position` (its key unchanged) under the undo record.
  template <typename Entry>
  static void Overwrite(WriteTransaction& txn, SegmentHeader* h, uint32_t undo_table,
                        uint32_t position, Entry* entries, const Entry& entry) {
    auto hook = [](const WriteTransaction* t, KillPoint p) { t->Hook(p); };
    txn.MarkWriting();
    SaveUndo(h, undo_table, position, entries[position]);
    WriteEntry(entries[position], entry, &txn, hook);
    txn.Hook(KillPoint::kAfterRecord);
  }

  template <typename Entry, typename KeyOf>
  static Status Upsert(WriteTransaction& txn, SegmentHeader* h, uint32_t undo_table,
                       const Entry& entry, Entry* entries, uint32_t* index, uint32_t* count,
                       const TableDescriptor& d, KeyOf key_of, const char* table) {
    const std::string_view key = key_of(entry);
    uint32_t slot = 0;
    const int64_t found = WriterFindSlot(index, entries, d, key, key_of, &slot);
    if (found >= 0) {
      Overwrite(txn, h, undo_table, static_cast<uint32_t>(found), entries, entry);
      return Status::Ok();
    }
    auto hook = [](const WriteTransaction* t, KillPoint p) { t->Hook(p); };
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
  static Result<bool> Remove(WriteTransaction& txn, SegmentHeader* h, uint32_t undo_table,
                             std::string_view key, Entry* entries, uint32_t* index, uint32_t* count,
                             const TableDescriptor& d, KeyOf key_of) {
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
      SaveUndo(h, undo_table, i, entries[i]);
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
  if (Status st = CheckClaimFields(e); !st.ok())
    return st.WithContext("claim " + std::string(e.Uid()));
  Segment* s = segment_;
  return TableOps::Upsert(*this, s->header(), kUndoClaims, e, s->claims_, s->claims_index_,
                          &s->header()->claim_count, s->claims_desc_, ClaimKey, "claims");
}

Result<bool> WriteTransaction::RemoveClaim(std::string_view uid) {
  RETURN_IF_ERROR(RequireRole(Role::kDraAgent, "the claims table"));
  Segment* s = segment_;
  return TableOps::Remove(*this, s->header(), kUndoClaims, uid, s->claims_, s->claims_index_,
                          &s->header()->claim_count, s->claims_desc_, ClaimKey);
}

std::optional<ClaimEntry> WriteTransaction::FindClaim(std::string_view uid) const {
  Segment* s = segment_;
  uint32_t slot = 0;
  const int64_t i =
      WriterFindSlot(s->claims_index_, s->claims_, s->claims_desc_, uid, ClaimKey, &slot);
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

Status WriteTransaction::ReserveClaim(const ClaimSpec& spec, const ReserveOptions& options) {
  RETURN_IF_ERROR(RequireRole(Role::kDraAgent, "the claims table"));
  ASSIGN_OR_RETURN(ClaimEntry entry, EncodeClaim(spec));
  if (spec.cpus.Empty()) return InvalidArgumentError("no CPUs");
  if (std::optional<ClaimEntry> existing = FindClaim(spec.uid);
      existing && existing->State() != ClaimState::kReleasing) {
    if (!(existing->cpus == spec.cpus)) {
      return AlreadyExistsError("already holds CPUs " + existing->cpus.ToListString() + ", not " +
                                spec.cpus.ToListString());
    }
    return UpsertClaimEntry(entry);  // idempotent re-prepare (state or fields may change)
  }
  const std::span<const ClaimEntry> claims(segment_->claims_, claim_count());
  if (options.admission) {
    RETURN_IF_ERROR(options.admission->Admit(spec.cpus, claims, spec.uid, options.floor_note));
  } else if (topology().updated_time_ns != 0) {
    RETURN_IF_ERROR(CpuAdmission::FromRecords(topology(), config())
                        .Admit(spec.cpus, claims, spec.uid, options.floor_note));
  } else {
    // No topology yet: nothing to check but the other claims.
    RETURN_IF_ERROR(CpuAdmission::CheckNotHeld(spec.cpus, claims, spec.uid));
  }
  return UpsertClaimEntry(entry);
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
  return TableOps::Upsert(*this, s->header(), kUndoContainers, e, s->containers_,
                          s->containers_index_, &s->header()->container_count, s->containers_desc_,
                          ContainerKey, "containers");
}

Status WriteTransaction::SetContainerCpus(std::string_view id, const CpuSet& cpus) {
  RETURN_IF_ERROR(RequireRole(Role::kNriAgent, "the containers table"));
  Segment* s = segment_;
  uint32_t slot = 0;
  const int64_t found = WriterFindSlot(s->containers_index_, s->containers_, s->containers_desc_,
                                       id, ContainerKey, &slot);
  if (found < 0) return NotFoundError("container " + std::string(id) + " is not recorded");
  ContainerEntry e;
  CopyOut(e, s->containers_[found]);
  e.cpus = cpus;
  e.updated_time_ns = RealtimeNs();
  e.checksum = RecordChecksum(e);
  TableOps::Overwrite(*this, s->header(), kUndoContainers, static_cast<uint32_t>(found),
                      s->containers_, e);
  return Status::Ok();
}

Result<bool> WriteTransaction::RemoveContainer(std::string_view id) {
  RETURN_IF_ERROR(RequireRole(Role::kNriAgent, "the containers table"));
  Segment* s = segment_;
  return TableOps::Remove(*this, s->header(), kUndoContainers, id, s->containers_,
                          s->containers_index_, &s->header()->container_count, s->containers_desc_,
                          ContainerKey);
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
