#include "common/cpu_set.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstdio>

#include "common/log_escape.h"

namespace dracpu {
namespace {

Status ParseError(std::string_view what, std::string_view text, size_t offset,
                  std::string_view reason) {
  return InvalidArgumentError(std::string(what) + " " + LogQuote(text, 64) + ": " +
                              std::string(reason) + " at offset " + std::to_string(offset));
}

std::string_view StripOneNewline(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses a CPU id made only of decimal digits starting at `pos`; advances pos.
Status ParseCpuId(std::string_view what, std::string_view full, std::string_view body, size_t& pos,
                  int& out) {
  const size_t start = pos;
  if (pos >= body.size()) return ParseError(what, full, pos, "missing CPU id");
  if (body[pos] == '-' || body[pos] == '+') return ParseError(what, full, pos, "sign not allowed");
  if (!IsDigit(body[pos])) return ParseError(what, full, pos, "expected a CPU id");
  while (pos < body.size() && IsDigit(body[pos])) ++pos;
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(body.data() + start, body.data() + pos, value);
  if (ec == std::errc::result_out_of_range || value >= CpuSet::kMaxCpus) {
    std::string shown(body.substr(start, std::min<size_t>(pos - start, 24)));
    if (pos - start > 24) shown += "...";
    return ParseError(
        what, full, start,
        "CPU id " + shown + " out of range (max " + std::to_string(CpuSet::kMaxCpus - 1) + ")");
  }
  (void)ptr;
  out = static_cast<int>(value);
  return Status::Ok();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

CpuSet::CpuSet(std::initializer_list<int> cpus) {
  for (int cpu : cpus) {
    assert(cpu >= 0 && cpu < kMaxCpus);
    Set(cpu);
  }
}

CpuSet CpuSet::Range(int first, int last) {
  CpuSet set;
  if (last < first) return set;
  assert(first >= 0 && last < kMaxCpus);
  for (int w = Word(first); w <= Word(last); ++w) {
    uint64_t mask = ~uint64_t{0};
    if (w == Word(first)) mask &= ~uint64_t{0} << (first % kWordBits);
    if (w == Word(last)) mask &= ~uint64_t{0} >> (kWordBits - 1 - last % kWordBits);
    set.words_[w] |= mask;
  }
  return set;
}

CpuSet CpuSet::FromVector(const std::vector<int>& cpus) {
  CpuSet set;
  for (int cpu : cpus) {
    assert(cpu >= 0 && cpu < kMaxCpus);
    set.Set(cpu);
  }
  return set;
}

Result<CpuSet> CpuSet::ParseList(std::string_view text, std::string_view what) {
  const std::string_view body = StripOneNewline(text);
  CpuSet set;
  if (body.empty()) return set;
  size_t pos = 0;
  while (true) {
    if (pos >= body.size() || body[pos] == ',') {
      return ParseError(what, text, pos, "empty item");
    }
    int first = 0;
    RETURN_IF_ERROR(ParseCpuId(what, text, body, pos, first));
    int last = first;
    if (pos < body.size() && body[pos] == '-') {
      ++pos;
      const size_t range_end_at = pos;
      RETURN_IF_ERROR(ParseCpuId(what, text, body, pos, last));
      if (last < first) {
        return ParseError(what, text, range_end_at,
                          "reversed range " + std::to_string(first) + "-" + std::to_string(last));
      }
    }
    set |= Range(first, last);
    if (pos == body.size()) break;
    if (body[pos] != ',') return ParseError(what, text, pos, "unexpected character");
    ++pos;
  }
  return set;
}

Result<CpuSet> CpuSet::ParseMask(std::string_view text, std::string_view what) {
  const std::string_view body = StripOneNewline(text);
  if (body.empty()) return ParseError(what, text, 0, "empty mask");
  // Split into comma-separated 32-bit words, most significant first.
  std::vector<std::pair<size_t, std::string_view>> groups;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i == body.size() || body[i] == ',') {
      groups.emplace_back(start, body.substr(start, i - start));
      start = i + 1;
    }
  }
  CpuSet set;
  const size_t n = groups.size();
  for (size_t g = 0; g < n; ++g) {
    const auto& [offset, digits] = groups[g];
    if (digits.empty()) return ParseError(what, text, offset, "empty word");
    if (digits.size() > 8) return ParseError(what, text, offset, "word longer than 8 hex digits");
    uint32_t value = 0;
    for (size_t i = 0; i < digits.size(); ++i) {
      const int v = HexValue(digits[i]);
      if (v < 0) return ParseError(what, text, offset + i, "not a hex digit");
      value = (value << 4) | static_cast<uint32_t>(v);
    }
    const size_t word32 = n - 1 - g;  // index of this 32-bit word, least significant = 0
    if (value == 0) continue;
    if (word32 >= static_cast<size_t>(kMaxCpus / 32)) {
      return ParseError(what, text, offset,
                        "CPU beyond the maximum of " + std::to_string(kMaxCpus - 1));
    }
    set.words_[word32 / 2] |= static_cast<uint64_t>(value) << (32 * (word32 % 2));
  }
  return set;
}

Status CpuSet::Add(int cpu) {
  if (cpu < 0 || cpu >= kMaxCpus) {
    return OutOfRangeError("CPU id " + std::to_string(cpu) + " out of range [0, " +
                           std::to_string(kMaxCpus) + ")");
  }
  Set(cpu);
  return Status::Ok();
}

int CpuSet::Count() const {
  int n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

bool CpuSet::Empty() const {
  for (uint64_t w : words_) {
    if (w != 0) return false;
  }
  return true;
}

int CpuSet::First() const {
  for (int i = 0; i < kWords; ++i) {
    if (words_[i] != 0) return i * kWordBits + std::countr_zero(words_[i]);
  }
  return -1;
}

int CpuSet::Last() const {
  for (int i = kWords - 1; i >= 0; --i) {
    if (words_[i] != 0) return i * kWordBits + (kWordBits - 1 - std::countl_zero(words_[i]));
  }
  return -1;
}

int CpuSet::Next(int cpu) const {
  int from = cpu + 1;
  if (from < 0) from = 0;
  if (from >= kMaxCpus) return -1;
  int w = Word(from);
  uint64_t bits = words_[w] & (~uint64_t{0} << (from % kWordBits));
  while (true) {
    if (bits != 0) return w * kWordBits + std::countr_zero(bits);
    if (++w >= kWords) return -1;
    bits = words_[w];
  }
}

int CpuSet::Nth(int n) const {
  if (n < 0) return -1;
  for (int i = 0; i < kWords; ++i) {
    const int c = std::popcount(words_[i]);
    if (n < c) {
      uint64_t bits = words_[i];
      for (int k = 0; k < n; ++k) bits &= bits - 1;  // drop the n lowest members
      return i * kWordBits + std::countr_zero(bits);
    }
    n -= c;
  }
  return -1;
}

bool CpuSet::IsSubsetOf(const CpuSet& other) const {
  for (int i = 0; i < kWords; ++i) {
    if ((words_[i] & ~other.words_[i]) != 0) return false;
  }
  return true;
}

bool CpuSet::Intersects(const CpuSet& other) const {
  for (int i = 0; i < kWords; ++i) {
    if ((words_[i] & other.words_[i]) != 0) return true;
  }
  return false;
}

int CpuSet::CountIntersection(const CpuSet& other) const {
  int n = 0;
  for (int i = 0; i < kWords; ++i) n += std::popcount(words_[i] & other.words_[i]);
  return n;
}

CpuSet& CpuSet::operator|=(const CpuSet& o) {
  for (int i = 0; i < kWords; ++i) words_[i] |= o.words_[i];
  return *this;
}
CpuSet& CpuSet::operator&=(const CpuSet& o) {
  for (int i = 0; i < kWords; ++i) words_[i] &= o.words_[i];
  return *this;
}
CpuSet& CpuSet::operator-=(const CpuSet& o) {
  for (int i = 0; i < kWords; ++i) words_[i] &= ~o.words_[i];
  return *this;
}
CpuSet& CpuSet::operator^=(const CpuSet& o) {
  for (int i = 0; i < kWords; ++i) words_[i] ^= o.words_[i];
  return *this;
}

bool operator<(const CpuSet& a, const CpuSet& b) {
  for (int i = 0; i < CpuSet::kWords; ++i) {
    const uint64_t diff = a.words_[i] ^ b.words_[i];
    if (diff != 0) {
      const uint64_t lowest = diff & (~diff + 1);
      return (a.words_[i] & lowest) != 0;
    }
  }
  return false;
}

std::vector<int> CpuSet::ToVector() const {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(Count()));
  for (int cpu : *this) out.push_back(cpu);
  return out;
}

std::string CpuSet::ToListString() const {
  std::string out;
  int cpu = First();
  while (cpu >= 0) {
    int last = cpu;
    int next = Next(cpu);
    while (next == last + 1) {
      last = next;
      next = Next(next);
    }
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (last > cpu) {
      out += '-';
      out += std::to_string(last);
    }
    cpu = next;
  }
  return out;
}

std::string CpuSet::ToMaskString(int min_words) const {
  const int last = Last();
  int words32 = last < 0 ? 1 : last / 32 + 1;
  if (words32 < min_words) words32 = min_words;
  if (words32 > kMaxCpus / 32) words32 = kMaxCpus / 32;
  std::string out;
  out.reserve(static_cast<size_t>(words32) * 9);
  for (int w = words32 - 1; w >= 0; --w) {
    const uint32_t value = static_cast<uint32_t>(words_[w / 2] >> (32 * (w % 2)));
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", value);
    out += buf;
    if (w > 0) out += ',';
  }
  return out;
}

}  // namespace dracpu
