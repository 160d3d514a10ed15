// Standard base64 encoding (RFC 4648, with padding), for kubeconfig *-data fields written by the
// simulator and by tests.
#pragma once

#include <cstdint>
#include <string>

namespace dracpu::sim {

inline std::string Base64Encode(const std::string& in) {
  static constexpr char kTable[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16) |
                       (static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8) |
                       static_cast<uint8_t>(in[i + 2]);
    for (int s : {18, 12, 6, 0}) out.push_back(kTable[(n >> s) & 63]);
  }
  const size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t n = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (rest == 2) n |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    out.push_back(kTable[(n >> 18) & 63]);
    out.push_back(kTable[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kTable[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace dracpu::sim
