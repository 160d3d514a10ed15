#include "common/log_escape.h"

namespace dracpu {
namespace {

bool Printable(char c) { return c >= 0x20 && c <= 0x7e; }

}  // namespace

std::string LogEscape(std::string_view text, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string_view kept = text.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size());
  for (char c : kept) {
    if (c == '\\') {
      out += "\\\\";
    } else if (Printable(c) && c != '"') {
      out += c;
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  if (kept.size() < text.size()) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string LogQuote(std::string_view text, size_t max_bytes) {
  return "\"" + LogEscape(text, max_bytes) + "\"";
}

bool IsLogSafe(std::string_view text) {
  for (char c : text) {
    if (!Printable(c)) return false;
  }
  return true;
}

}  // namespace dracpu
