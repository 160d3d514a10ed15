// Lock-free reads: seqlock snapshots, index lookups, waiting for a change.
#include <algorithm>
#include <functional>
#include <optional>
#include <thread>

#include "shm-schema/atomic_copy.h"
#include "shm-schema/checksum.h"
#include "shm-schema/segment.h"
#include "shm-schema/segment_internal.h"

namespace dracpu::shm {

using internal::Backoff;
using internal::CString;
using internal::Gen;
using internal::GenWord;
using internal::SpinDeadlineClock;

namespace {

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

uint64_t Segment::generation() const { return Gen(header()).load(std::memory_order_acquire); }

Status Segment::ReadSnapshotInto(Snapshot& out, const SnapshotOptions& options) const {
  SegmentHeader* h = header();
  out.identity = identity_;
  out.identity.minor = LoadWord32(&h->minor);
  const auto deadline = SpinDeadlineClock::now() + options.timeout;
  for (int attempt = 0;; ++attempt) {
    const uint64_t g1 = Gen(h).load(std::memory_order_acquire);
    const bool timed_out = (attempt & 63) == 63 && SpinDeadlineClock::now() > deadline;
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
                                         std::chrono::milliseconds timeout,
                                         const std::string& path) {
  const auto deadline = SpinDeadlineClock::now() + timeout;
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
    if ((attempt & 63) == 63 && SpinDeadlineClock::now() > deadline) {
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
  return SeqlockFind(header(), claims_index_, claims_, claims_desc_, uid, &ClaimEntry::uid, timeout,
                     path_);
}

Result<std::optional<ContainerEntry>> Segment::FindContainer(
    std::string_view id, std::chrono::milliseconds timeout) const {
  return SeqlockFind(header(), containers_index_, containers_, containers_desc_, id,
                     &ContainerEntry::container_id, timeout, path_);
}

Result<uint64_t> Segment::WaitForChange(uint64_t seen, std::chrono::nanoseconds timeout,
                                        const std::atomic<bool>* cancel,
                                        const std::stop_token& stop) const {
  SegmentHeader* h = header();
  const auto deadline = SpinDeadlineClock::now() + timeout;
  uint32_t* waiters = WaitersWord();
  const bool registered = waiters != nullptr;
  if (registered) std::atomic_ref<uint32_t>(*waiters).fetch_add(1, std::memory_order_seq_cst);
  // A stop request wakes the wait. The generation word is shared with the other processes, so
  // the request cannot change it: a single wake landing between the check below and the futex
  // wait would be lost. The requester therefore keeps waking (every waiter on the word re-checks;
  // the others find nothing changed and wait again) until this wait says it is leaving.
  // The callback also runs on this thread when the stop came before it was registered; then the
  // first check below sees the request and there is nobody to wake.
  std::atomic<bool> leaving{false};
  const std::thread::id waiter = std::this_thread::get_id();
  std::optional<std::stop_callback<std::function<void()>>> wake;
  wake.emplace(stop, std::function<void()>([h, &leaving, waiter] {
                 if (std::this_thread::get_id() == waiter) return;
                 while (!leaving.load(std::memory_order_acquire)) {
                   FutexWakeAll(GenWord(h));
                   std::this_thread::sleep_for(std::chrono::microseconds(200));
                 }
               }));
  Result<uint64_t> result = DeadlineExceededError("");
  for (;;) {
    if (stop.stop_requested()) {
      result = Status(StatusCode::kCancelled, "segment " + path_ + ": wait cancelled");
      break;
    }
    const uint64_t g = Gen(h).load(std::memory_order_seq_cst);
    if ((g & 1) == 0 && g != seen) {
      result = g;
      break;
    }
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      result = Status(StatusCode::kCancelled, "segment " + path_ + ": wait for a change cancelled");
      break;
    }
    const auto left = deadline - SpinDeadlineClock::now();
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
  // Ends a requester's wake loop before the callback is unregistered (which waits for it).
  leaving.store(true, std::memory_order_release);
  wake.reset();
  if (registered) std::atomic_ref<uint32_t>(*waiters).fetch_sub(1, std::memory_order_seq_cst);
  return result;
}

Result<AgentStatus> Segment::GetAgentStatus(Role role) const {
  if (role == Role::kReader) return InvalidArgumentError("the reader role has no agent record");
  AgentRecord rec{};
  CopyOut(rec, header()->agents[static_cast<int>(role)]);  // word-atomic; fields are independent
  AgentStatus st;
  st.attached = rec.pid != 0;
  st.pid = rec.pid;
  st.version = rec.Version();
  ASSIGN_OR_RETURN(st.live, RoleLive(role));
  const uint64_t now = boottime_ns_();
  if (rec.heartbeat_ns != 0 && rec.heartbeat_ns <= now) {
    st.heartbeat_age = std::chrono::nanoseconds(now - rec.heartbeat_ns);
  }
  return st;
}

}  // namespace dracpu::shm
