// Text from outside (claim uids and names from the kubelet or the API server, pod and container
// names and env entries from the runtime, file names found on disk) goes into log lines, error
// messages and answers to peers only through LogEscape, so a hostile name cannot forge a log
// line (a newline), drive a terminal (escape sequences) or flood a log (a 1 MiB name).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dracpu {

// `text` with every byte outside printable ASCII (0x20-0x7e) written as "\xNN", and the
// backslash and double quote as "\\" and "\x22" (so a quoted value cannot end early), cut after
// `max_bytes` input bytes with "...(N bytes)" appended. Short printable text without those two
// characters comes back unchanged.
std::string LogEscape(std::string_view text, size_t max_bytes = 256);

// "\"" + LogEscape(text, max_bytes) + "\"": a value quoted in a message.
std::string LogQuote(std::string_view text, size_t max_bytes = 256);

// Whether every byte of `text` is printable ASCII (what LogEscape leaves as is, backslash
// included).
bool IsLogSafe(std::string_view text);

}  // namespace dracpu
