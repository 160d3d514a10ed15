#include "tests/sim/apiserver/quantity.h"

#include <limits>

namespace dracpu::sim {
namespace {

using U128 = unsigned __int128;

constexpr int kMaxDigits = 36;
constexpr char kFormatWrong[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr char kNumeric[] = "unable to parse numeric part of quantity";
constexpr char kSuffix[] = "unable to parse quantity's suffix";

U128 Pow10(int n) {
  U128 v = 1;
  while (n-- > 0) v *= 10;
  return v;
}

int Digits(U128 v) {
  int n = 0;
  while (v > 0) {
    v /= 10;
    ++n;
  }
  return n;
}

std::string ToDecimal(U128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return s;
}

// Moves trailing zeros of the mantissa into the exponent.
void Normalize(U128& m, int& e) {
  if (m == 0) {
    e = 0;
    return;
  }
  while (m % 10 == 0) {
    m /= 10;
    ++e;
  }
}

// Rounds m x 10^e up (away from zero) to a whole number at 10^-scale; nullopt beyond int64.
std::optional<int64_t> RoundedUp(bool negative, U128 m, int e, int scale) {
  const int shift = e + scale;
  U128 whole;
  if (shift >= 0) {
    if (Digits(m) + shift > 19) return std::nullopt;
    whole = m * Pow10(shift);
  } else if (-shift > 38) {
    whole = m == 0 ? 0 : 1;
  } else {
    const U128 d = Pow10(-shift);
    whole = m / d + (m % d != 0 ? 1 : 0);
  }
  if (whole > static_cast<U128>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  const int64_t v = static_cast<int64_t>(whole);
  return negative ? -v : v;
}

// ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$, by hand (this runs on every quantity written).
bool MatchesShape(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  const size_t number = i;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
  if (i == number) return false;
  while (i < s.size() && std::string_view("eEinumkKMGTP").find(s[i]) != std::string_view::npos) ++i;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i == s.size();
}

}  // namespace

std::optional<Quantity> Quantity::Parse(std::string_view text, std::string* error) {
  const std::string s(text);
  if (!MatchesShape(s)) {
    *error = kFormatWrong;
    return std::nullopt;
  }
  Quantity q;
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') q.negative_ = s[i++] == '-';
  bool seen_digit = false;
  bool seen_dot = false;
  int significant = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      if (seen_dot) break;  // the rest is parsed as a suffix (and refused there)
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    seen_digit = true;
    if (q.mantissa_ == 0 && c == '0') {
      if (seen_dot) --q.exponent_;
      continue;
    }
    if (significant < kMaxDigits) {
      q.mantissa_ = q.mantissa_ * 10 + static_cast<unsigned>(c - '0');
      ++significant;
      if (seen_dot) --q.exponent_;
    } else {
      q.huge_ = q.huge_ || !seen_dot;  // digits beyond the precision we keep
      if (!seen_dot) ++q.exponent_;
    }
  }
  if (!seen_digit) {
    *error = kNumeric;
    return std::nullopt;
  }
  const std::string suffix = s.substr(i);
  int exp10 = 0;
  int exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i' &&
             std::string_view("KMGTPE").find(suffix[0]) != std::string_view::npos) {
    q.format_ = Format::kBinarySI;
    exp2 = 10 * (1 + static_cast<int>(std::string_view("KMGTPE").find(suffix[0])));
  } else if (suffix.size() == 1 &&
             std::string_view("numkMGTPE").find(suffix[0]) != std::string_view::npos) {
    static constexpr int kExp[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    exp10 = kExp[std::string_view("numkMGTPE").find(suffix[0])];
  } else if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {
    const std::string_view rest = std::string_view(suffix).substr(1);
    size_t j = rest[0] == '+' || rest[0] == '-' ? 1 : 0;
    if (j == rest.size() || rest.size() - j > 4) {
      *error = kSuffix;
      return std::nullopt;
    }
    for (size_t k = j; k < rest.size(); ++k) {
      if (rest[k] < '0' || rest[k] > '9') {
        *error = kSuffix;
        return std::nullopt;
      }
    }
    exp10 = std::stoi(std::string(rest));
    q.format_ = Format::kDecimalExponent;
  } else {
    *error = kSuffix;
    return std::nullopt;
  }
  q.exponent_ += exp10;
  for (int b = 0; b < exp2; ++b) {
    if (q.mantissa_ > (static_cast<U128>(1) << 125)) {
      q.mantissa_ /= 10;
      ++q.exponent_;
    }
    q.mantissa_ *= 2;
  }
  Normalize(q.mantissa_, q.exponent_);
  if (q.mantissa_ == 0) q.negative_ = false;
  if (Digits(q.mantissa_) + q.exponent_ > 38) q.huge_ = true;
  return q;
}

Quantity Quantity::FromInt(int64_t v) {
  Quantity q;
  q.negative_ = v < 0;
  q.mantissa_ = v < 0 ? static_cast<U128>(-(v + 1)) + 1 : static_cast<U128>(v);
  Normalize(q.mantissa_, q.exponent_);
  return q;
}

int Quantity::Sign() const {
  if (mantissa_ == 0) return 0;
  return negative_ ? -1 : 1;
}

int Quantity::Compare(const Quantity& other) const {
  if (Sign() != other.Sign()) return Sign() < other.Sign() ? -1 : 1;
  if (Sign() == 0) return 0;
  // Same sign: compare magnitudes, then flip for negatives.
  int magnitude;
  const int ma = Digits(mantissa_) + exponent_;
  const int mb = Digits(other.mantissa_) + other.exponent_;
  if (huge_ != other.huge_) {
    magnitude = huge_ ? 1 : -1;
  } else if (ma != mb) {
    magnitude = ma < mb ? -1 : 1;
  } else {
    U128 a = mantissa_;
    U128 b = other.mantissa_;
    if (exponent_ > other.exponent_) a *= Pow10(exponent_ - other.exponent_);
    if (other.exponent_ > exponent_) b *= Pow10(other.exponent_ - exponent_);
    magnitude = a == b ? 0 : (a < b ? -1 : 1);
  }
  return negative_ ? -magnitude : magnitude;
}

Quantity Quantity::Plus(const Quantity& other) const {
  if (other.Sign() == 0) return *this;
  if (Sign() == 0) return other;
  Quantity r;
  r.format_ = format_;
  const int e = std::min(exponent_, other.exponent_);
  const int shift_a = exponent_ - e;
  const int shift_b = other.exponent_ - e;
  if (huge_ || other.huge_ || Digits(mantissa_) + shift_a > 37 ||
      Digits(other.mantissa_) + shift_b > 37) {
    // Far beyond anything validation adds (min + step): keep the larger term, marked huge.
    r = Compare(other) * Sign() >= 0 ? *this : other;
    r.huge_ = true;
    return r;
  }
  const U128 a = mantissa_ * Pow10(shift_a);
  const U128 b = other.mantissa_ * Pow10(shift_b);
  if (negative_ == other.negative_) {
    r.mantissa_ = a + b;
    r.negative_ = negative_;
  } else if (a >= b) {
    r.mantissa_ = a - b;
    r.negative_ = negative_;
  } else {
    r.mantissa_ = b - a;
    r.negative_ = other.negative_;
  }
  r.exponent_ = e;
  Normalize(r.mantissa_, r.exponent_);
  if (r.mantissa_ == 0) r.negative_ = false;
  return r;
}

bool Quantity::IsFractional() const { return mantissa_ != 0 && exponent_ < 0; }
bool Quantity::IsMilliExact() const { return mantissa_ == 0 || exponent_ >= -3; }

std::optional<int64_t> Quantity::Value() const {
  if (huge_) return std::nullopt;
  return RoundedUp(negative_, mantissa_, exponent_, 0);
}

std::optional<int64_t> Quantity::MilliValue() const {
  if (huge_) return std::nullopt;
  return RoundedUp(negative_, mantissa_, exponent_, 3);
}

std::string Quantity::String() const {
  if (mantissa_ == 0) return "0";
  const std::string sign = negative_ ? "-" : "";
  if (format_ == Format::kBinarySI && exponent_ >= 0 && Digits(mantissa_) + exponent_ <= 37) {
    U128 v = mantissa_ * Pow10(exponent_);
    int k = 0;
    while (k < 6 && v >= 1024 && v % 1024 == 0) {
      v /= 1024;
      ++k;
    }
    static constexpr const char* kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    return sign + ToDecimal(v) + kBinary[k];
  }
  // Decimal: the largest multiple of 3 not above the exponent, within n..E; finer than nano is
  // rounded up to nano as upstream does.
  U128 m = mantissa_;
  int e = exponent_;
  if (e < -9) {
    const U128 d = Pow10(-9 - e);
    m = m / d + (m % d != 0 ? 1 : 0);
    e = -9;
  }
  int e3 = e >= 0 ? (e / 3) * 3 : -(((-e) + 2) / 3) * 3;
  if (format_ != Format::kDecimalExponent) e3 = std::min(e3, 18);
  if (e > e3) m *= Pow10(e - e3);
  if (format_ == Format::kDecimalExponent) {
    return sign + ToDecimal(m) + (e3 == 0 ? "" : "e" + std::to_string(e3));
  }
  static constexpr const char* kDecimal[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
  return sign + ToDecimal(m) + kDecimal[(e3 + 9) / 3];
}

}  // namespace dracpu::sim
