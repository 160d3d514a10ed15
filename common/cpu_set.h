// CpuSet: a fixed-capacity set of logical CPU ids (0 .. kMaxCpus-1) with fast set algebra.
//
// Capacity is 8192 CPUs (the largest CONFIG_NR_CPUS Linux allows, on PowerPC). The set is a plain
// array of 64-bit words, trivially copyable, so it can be stored in shared memory as is.
// Iteration is in ascending CPU order.
//
// Text formats:
//  * Linux list format, "0-3,8,10-11": ParseList / ToListString. Output is canonical: ascending,
//    runs of two or more CPUs collapsed to "a-b", the empty set is "".
//  * Kernel hex-mask format, "00000000,0000ff01": ParseMask / ToMaskString; 32-bit words of 8 hex
//    digits, most significant first, comma-separated (the format of sysfs *_map/cpumap files).
// Parsing is strict and errors name the input, the offending item and its byte offset. One
// trailing newline (as every sysfs file has) is accepted; nothing else is.
//
// Thread safety: a plain value.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/status.h"

namespace dracpu {

class CpuSet {
 public:
  static constexpr int kMaxCpus = 8192;
  static constexpr int kWordBits = 64;
  static constexpr int kWords = kMaxCpus / kWordBits;

  constexpr CpuSet() = default;
  // The CPUs listed; every id must be in range (checked with assert; use Add for checked input).
  CpuSet(std::initializer_list<int> cpus);

  // [first, last] inclusive; empty when last < first. Ids must be in range.
  static CpuSet Range(int first, int last);
  static CpuSet FromVector(const std::vector<int>& cpus);

  // Strict parsers; see the file comment. `what` names the input in error messages.
  static Result<CpuSet> ParseList(std::string_view text, std::string_view what = "cpu list");
  static Result<CpuSet> ParseMask(std::string_view text, std::string_view what = "cpu mask");

  // Checked insertion: OUT_OF_RANGE for ids outside [0, kMaxCpus).
  Status Add(int cpu);
  // Unchecked (assert) versions for ids already known to be valid.
  void Set(int cpu) { words_[Word(cpu)] |= Bit(cpu); }
  void Clear(int cpu) { words_[Word(cpu)] &= ~Bit(cpu); }
  bool Contains(int cpu) const {
    return cpu >= 0 && cpu < kMaxCpus && (words_[Word(cpu)] & Bit(cpu)) != 0;
  }

  int Count() const;
  bool Empty() const;
  // Lowest / highest member, -1 when empty.
  int First() const;
  int Last() const;
  // Lowest member greater than `cpu`, -1 when none.
  int Next(int cpu) const;
  // The n-th lowest member (0-based), -1 when n >= Count().
  int Nth(int n) const;

  bool IsSubsetOf(const CpuSet& other) const;
  bool Intersects(const CpuSet& other) const;
  // Count() of the intersection, without building it.
  int CountIntersection(const CpuSet& other) const;

  CpuSet& operator|=(const CpuSet& o);
  CpuSet& operator&=(const CpuSet& o);
  CpuSet& operator-=(const CpuSet& o);  // set difference
  CpuSet& operator^=(const CpuSet& o);
  friend CpuSet operator|(CpuSet a, const CpuSet& b) { return a |= b; }
  friend CpuSet operator&(CpuSet a, const CpuSet& b) { return a &= b; }
  friend CpuSet operator-(CpuSet a, const CpuSet& b) { return a -= b; }
  friend CpuSet operator^(CpuSet a, const CpuSet& b) { return a ^= b; }
  friend bool operator==(const CpuSet& a, const CpuSet& b) { return a.words_ == b.words_; }
  // Orders by lowest differing CPU: the set holding it sorts first (so {0} < {1}).
  friend bool operator<(const CpuSet& a, const CpuSet& b);

  std::vector<int> ToVector() const;
  std::string ToListString() const;
  // At least `min_words` 32-bit words, more when the set needs them.
  std::string ToMaskString(int min_words = 1) const;

  // Raw words for shared-memory storage and hashing.
  const std::array<uint64_t, kWords>& words() const { return words_; }
  std::array<uint64_t, kWords>& mutable_words() { return words_; }

  class Iterator {
   public:
    using value_type = int;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Iterator(const CpuSet* set, int cpu) : set_(set), cpu_(cpu) {}
    int operator*() const { return cpu_; }
    Iterator& operator++() {
      cpu_ = set_->Next(cpu_);
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.cpu_ == b.cpu_; }

   private:
    const CpuSet* set_ = nullptr;
    int cpu_ = -1;
  };
  Iterator begin() const { return Iterator(this, First()); }
  Iterator end() const { return Iterator(this, -1); }

 private:
  static constexpr int Word(int cpu) { return cpu / kWordBits; }
  static constexpr uint64_t Bit(int cpu) { return uint64_t{1} << (cpu % kWordBits); }

  std::array<uint64_t, kWords> words_{};
};

static_assert(std::is_trivially_copyable_v<CpuSet>);
static_assert(sizeof(CpuSet) == CpuSet::kMaxCpus / 8);

}  // namespace dracpu
