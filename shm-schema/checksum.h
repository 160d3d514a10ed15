// Checksums of shared records: a 64-bit hash over whole 64-bit words, four independent lanes so
// that a 2 KiB entry hashes in ~100 ns. It detects torn and damaged records (a writer killed
// mid-copy, a stray write); it is not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "shm-schema/layout.h"

namespace dracpu::shm {

// Hash of `words` 64-bit words.
uint64_t HashWords(const uint64_t* data, size_t words);

// Hash of a byte string (index keys: claim uids, container ids).
uint64_t HashKey(std::string_view key);

// The checksum of a record whose last 8 bytes are its `checksum` field: the hash of everything
// before it. Never 0 (0 marks a record that was never written).
template <typename T>
uint64_t RecordChecksum(const T& record) {
  static_assert(sizeof(T) % 8 == 0 && offsetof(T, checksum) == sizeof(T) - 8);
  const uint64_t h = HashWords(reinterpret_cast<const uint64_t*>(&record), sizeof(T) / 8 - 1);
  return h == 0 ? 1 : h;
}

// SegmentHeader::identity_checksum: the hash of bytes [0, offsetof(identity_checksum)) with
// `minor` taken as 0, so a newer writer raising `minor` never changes it (the identity is
// immutable after creation and a concurrent attach cannot see a half-updated pair). Never 0.
uint64_t HeaderIdentityChecksum(const SegmentHeader& header);

}  // namespace dracpu::shm
