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

// Pairs of words are multiplied 64x64->128 after keying (as XXH3's mid-size path does), folded,
// and summed into four independent accumulators: one multiply per 16 bytes and no long
// dependency chain, ~3x faster than a word-serial multiply-xor. Keys are odd constants, so a
// keyed word is zero only if the data word equals that constant.
uint64_t HashWords(const uint64_t* data, size_t words) {
  constexpr uint64_t kKey[8] = {0xbe4ba423396cfeb9ULL, 0x1cad21f72c81017dULL, 0xdb979083e96dd4dfULL,
                                0x78e5c0cc4ee679cbULL, 0x2172ffcc7dd05a83ULL, 0x8e2443f7744608b9ULL,
                                0x4c263a81e69035e1ULL, 0xcb00c391bb52283dULL};
  uint64_t acc[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL,
                     0x082efa98ec4e6c89ULL};
  size_t i = 0;
  for (; i + 8 <= words; i += 8) {
    for (size_t l = 0; l < 4; ++l) {
      const unsigned __int128 p = static_cast<unsigned __int128>(data[i + 2 * l] ^ kKey[2 * l]) *
                                  (data[i + 2 * l + 1] ^ kKey[2 * l + 1]);
      acc[l] += static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
      acc[l] = (acc[l] << 17) | (acc[l] >> 47);  // position-dependent: swapped pairs differ
    }
  }
  for (; i < words; ++i) acc[i % 4] = (acc[i % 4] ^ data[i]) * kMul;
  uint64_t h = words * kMul;
  for (size_t l = 0; l < 4; ++l) h = Mix(h ^ Mix(acc[l] + static_cast<uint64_t>(l)));
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
