// Helpers shared by the segment's .cc files (not part of the API).
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include "shm-schema/layout.h"

namespace dracpu::shm::internal {

// The deadlines of the lock-free reads and of WaitForChange bound real spinning against a
// concurrent writer and a futex wait in the kernel: kernel time by nature, so not the injectable
// Clock of common/clock.h (a virtual clock would let a reader spin forever). Heartbeats use the
// OpenOptions::boottime_ns seam instead.
using SpinDeadlineClock = std::chrono::steady_clock;

// Upper bound on the capacities Open accepts from a header (a sanity check, not a policy).
inline constexpr uint32_t kMaxCapacity = 1u << 20;

inline std::atomic_ref<uint64_t> Gen(SegmentHeader* h) {
  return std::atomic_ref<uint64_t>(h->generation);
}
inline std::atomic_ref<uint32_t> Waiters(SegmentHeader* h) {
  return std::atomic_ref<uint32_t>(h->waiters);
}

// The futex word: the low 32 bits of the generation (little-endian, layout.h).
inline uint32_t* GenWord(SegmentHeader* h) { return reinterpret_cast<uint32_t*>(&h->generation); }

inline std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

inline std::string_view CString(const char* s, size_t n) {
  return std::string_view(s, ::strnlen(s, n));
}

template <size_t N>
void PutField(char (&field)[N], std::string_view v) {
  std::memset(field, 0, N);
  std::memcpy(field, v.data(), std::min(v.size(), N - 1));
}

inline bool SameDescriptor(const TableDescriptor& a, const TableDescriptor& b) {
  return a.entries_offset == b.entries_offset && a.index_offset == b.index_offset &&
         a.capacity == b.capacity && a.entry_size == b.entry_size && a.index_slots == b.index_slots;
}

// Backs off while a writer holds the generation odd or keeps changing it.
inline void Backoff(int attempt) {
  if (attempt < 16) return;
  if (attempt < 64) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}

}  // namespace dracpu::shm::internal
