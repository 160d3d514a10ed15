// Recovery after a writer died holding the mutex (EOWNERDEAD) or left a torn write.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "shm-schema/atomic_copy.h"
#include "shm-schema/checksum.h"
#include "shm-schema/segment.h"
#include "shm-schema/segment_internal.h"

namespace dracpu::shm {

using internal::CString;
using internal::Gen;
using internal::GenWord;
using internal::Hex;
using internal::Waiters;

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

void Segment::RestoreFromUndo(SegmentHeader* h, RecoveryReport& report) {
  const UndoRecord& u = h->undo;
  if (u.generation != report.generation_found) return;  // saved by an earlier, committed write
  auto restore = [&](auto* entries, uint32_t count, const char* table, auto check, auto key) {
    using Entry = std::remove_pointer_t<decltype(entries)>;
    if (u.position >= count) return;
    Entry saved;
    std::memcpy(&saved, u.entry_words, sizeof saved);
    if (!check(saved).ok()) return;  // the save itself was interrupted: the entry was untouched
    const Status current = check(entries[u.position]);
    if (current.ok()) return;  // the overwrite completed
    CopyIn(entries[u.position], saved);
    report.actions.push_back(std::string(table) + "[" + std::to_string(u.position) +
                             "] key=" + std::string(key(saved)) + ": " + current.message() +
                             " (overwrite interrupted); restored the version saved before it");
  };
  if (u.table == kUndoClaims) {
    restore(claims_, std::min(h->claim_count, claims_desc_.capacity), "claims", CheckClaimEntry,
            [](const ClaimEntry& e) { return e.Uid(); });
  } else if (u.table == kUndoContainers) {
    restore(containers_, std::min(h->container_count, containers_desc_.capacity), "containers",
            CheckContainerEntry, [](const ContainerEntry& e) { return e.Id(); });
  }
}

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
  if (report.torn) RestoreFromUndo(h, report);
  CompactTable(
      claims_, &h->claim_count, claims_desc_.capacity, "claims", CheckClaimEntry,
      [](const ClaimEntry& e) { return std::string(CString(e.uid, kUidBytes)); }, report.actions);
  CompactTable(
      containers_, &h->container_count, containers_desc_.capacity, "containers",
      CheckContainerEntry,
      [](const ContainerEntry& e) {
        return std::string(CString(e.container_id, kContainerIdBytes));
      },
      report.actions);
  RebuildClaimsIndexLocked();
  RebuildContainersIndexLocked();
  StoreWord(&h->undo.generation, 0);
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

}  // namespace dracpu::shm
