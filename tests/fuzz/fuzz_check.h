// What every fuzz target shares: the input as text, and contract checks that abort. An abort is
// what libFuzzer (make fuzz) and the replay driver of the normal suite (replay_main.cc) both
// report as a failure with the input that caused it, so a property a target states is checked
// as hard as "no crash".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dracpu::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Prints "fuzz contract broken: <what>" with the input's size and aborts.
[[noreturn]] void Broken(std::string_view what, std::string_view input);

// Aborts unless `condition` holds; `what` says which contract it is.
inline void Check(bool condition, std::string_view what, std::string_view input) {
  if (!condition) Broken(what, input);
}

// Splits `input` into a selector byte (0 when empty) and the rest, for targets that fuzz several
// entry points or a chunking of the stream with one input.
struct Selected {
  uint8_t selector = 0;
  std::string_view rest;
};
inline Selected Select(std::string_view input) {
  if (input.empty()) return {};
  return {static_cast<uint8_t>(input.front()), input.substr(1)};
}

}  // namespace dracpu::fuzz
