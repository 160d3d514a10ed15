#include "shm-schema/checksum.h"

#include "shm-schema/atomic_copy.h"

namespace dracpu::shm {
namespace {

constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;

inline uint64_t Mix(uint64_t h) {
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 29;
  return h;
}

}  // namespace

uint64_t HashWords(const uint64_t* data, size_t words) {
  uint64_t lane[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL,
                      0x082efa98ec4e6c89ULL};
  size_t i = 0;
  for (; i + 4 <= words; i += 4) {
    for (int l = 0; l < 4; ++l) lane[l] = (lane[l] ^ data[i + l]) * kMul;
  }
  for (; i < words; ++i) lane[i % 4] = (lane[i % 4] ^ data[i]) * kMul;
  uint64_t h = words * kMul;
  for (int l = 0; l < 4; ++l) h = Mix(h ^ Mix(lane[l] + static_cast<uint64_t>(l)));
  return h;
}

uint64_t HashKey(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, then a final mix
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ULL;
  return Mix(h);
}

uint64_t HeaderIdentityChecksum(const SegmentHeader& h) {
  constexpr size_t kWords = offsetof(SegmentHeader, identity_checksum) / 8;
  uint64_t words[kWords];
  CopyWordsOut(words, reinterpret_cast<const uint64_t*>(&h), kWords);
  static_assert(offsetof(SegmentHeader, major) == 8 && offsetof(SegmentHeader, minor) == 12);
  words[1] &= 0xffffffffULL;  // word 1 = major (low half) | minor (high half): drop minor
  const uint64_t s = HashWords(words, kWords);
  return s == 0 ? 1 : s;
}

}  // namespace dracpu::shm
