// Word-wise atomic copies between process-local memory and the shared segment.
//
// The segment is read by processes that never take its lock (seqlock readers), so every access to
// shared bytes that can race is an atomic access: readers load 64-bit words with relaxed
// std::atomic_ref loads and writers store them with relaxed atomic stores. The seqlock's
// generation word and fences (segment.cc) give the ordering, as in Boehm, "Can seqlocks get along
// with programming language memory models?" (MSPC 2012). On x86-64 and arm64 a relaxed 64-bit
// load/store is a plain mov/ldr/str, so this costs about what memcpy costs minus vectorization.
//
// Every shared struct is 8-byte aligned and a multiple of 8 bytes (layout.h asserts it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace dracpu::shm {

inline uint64_t LoadWord(const uint64_t* shared) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(shared)).load(std::memory_order_relaxed);
}
inline void StoreWord(uint64_t* shared, uint64_t value) {
  std::atomic_ref<uint64_t>(*shared).store(value, std::memory_order_relaxed);
}
inline uint32_t LoadWord32(const uint32_t* shared) {
  return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(shared)).load(std::memory_order_relaxed);
}
inline void StoreWord32(uint32_t* shared, uint32_t value) {
  std::atomic_ref<uint32_t>(*shared).store(value, std::memory_order_relaxed);
}

// Copies `words` 64-bit words from shared memory into local memory.
inline void CopyWordsOut(uint64_t* local, const uint64_t* shared, size_t words) {
  for (size_t i = 0; i < words; ++i) local[i] = LoadWord(shared + i);
}
// Copies `words` 64-bit words from local memory into shared memory.
inline void CopyWordsIn(uint64_t* shared, const uint64_t* local, size_t words) {
  for (size_t i = 0; i < words; ++i) StoreWord(shared + i, local[i]);
}

template <typename T>
void CopyOut(T& local, const T& shared) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0 && alignof(T) >= 8);
  CopyWordsOut(reinterpret_cast<uint64_t*>(&local), reinterpret_cast<const uint64_t*>(&shared),
               sizeof(T) / 8);
}
template <typename T>
void CopyIn(T& shared, const T& local) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0 && alignof(T) >= 8);
  CopyWordsIn(reinterpret_cast<uint64_t*>(&shared), reinterpret_cast<const uint64_t*>(&local),
              sizeof(T) / 8);
}

}  // namespace dracpu::shm
