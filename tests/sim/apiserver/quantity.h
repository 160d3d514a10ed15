// Kubernetes resource.Quantity, as far as the API server's ResourceSlice validation uses it:
// the strict parse (a bad quantity is a 400 decode error), exact comparison and addition, the
// rounding-up Value() / MilliValue(), and the canonical String() that upstream prints in its
// messages ("1000" -> "1k", "0.5" -> "500m", "1024" with a binary suffix elsewhere -> "1Ki").
//
// Values are held exactly as mantissa x 10^exponent (binary suffixes multiplied out) with up to
// 36 significant digits; larger numbers are marked huge, which validation only ever needs to
// compare against MaxInt64 (its "must not be larger than 9223372036854775807" rule).
//
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dracpu::sim {

class Quantity {
 public:
  // nullopt with `*error` set to upstream's message when `text` is not a quantity.
  static std::optional<Quantity> Parse(std::string_view text, std::string* error);
  static Quantity FromInt(int64_t v);

  int Sign() const;
  bool huge() const { return huge_; }
  // Exact comparison; a huge value is larger than any non-huge one of the same sign.
  int Compare(const Quantity& other) const;
  Quantity Plus(const Quantity& other) const;
  // Has a non-zero fractional part.
  bool IsFractional() const;
  // value * 1000 is a whole number (upstream: "can be represented as a milli value").
  bool IsMilliExact() const;
  // Rounded up to a whole number / a whole number of thousandths; nullopt beyond int64.
  std::optional<int64_t> Value() const;
  std::optional<int64_t> MilliValue() const;
  // Upstream's canonical form, in the suffix family the text was written in.
  std::string String() const;

 private:
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };
  bool negative_ = false;
  unsigned __int128 mantissa_ = 0;
  int exponent_ = 0;  // value = mantissa * 10^exponent
  bool huge_ = false;
  Format format_ = Format::kDecimalSI;
};

}  // namespace dracpu::sim
