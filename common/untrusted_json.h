// How every JSON document from outside the process is parsed: API server responses and watch
// events, CDI specs read back from disk, a claim's opaque parameters, `allocate` input. One set
// of rules so that no reader is weaker than another:
//  * nested at most kMaxJsonDepth arrays/objects deep: RapidJSON's reader, its Writer and
//    CopyFrom recurse once per level, so a hostile "[[[[..." of a few MiB would overflow the
//    stack; Kubernetes objects nest about 20 deep (managedFields included);
//  * valid UTF-8 only (the API server and CDI writers never produce anything else; strings
//    that are not would reach our logs, files and answers);
//  * one value and nothing after it but whitespace.
// Header-only (RapidJSON is header-only) so every part that reads JSON shares it without a
// library dependency.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace dracpu {

inline constexpr int kMaxJsonDepth = 256;
inline constexpr unsigned kUntrustedJsonParseFlags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;

// The deepest nesting of arrays and objects in `text` outside strings; exact for valid JSON
// (for anything else the parser's own error decides).
inline int JsonNestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escape = false;
  for (char c : text) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Parses `text` into `doc` by the rules above. INVALID_ARGUMENT "not valid JSON at offset N:
// <reason>" or "nested more than 256 deep"; the caller adds what the document was.
inline Status ParseUntrustedJson(std::string_view text, rapidjson::Document& doc) {
  if (JsonNestingDepth(text) > kMaxJsonDepth) {
    return InvalidArgumentError("JSON nested more than " + std::to_string(kMaxJsonDepth) +
                                " arrays or objects deep");
  }
  doc.Parse<kUntrustedJsonParseFlags>(text.data(), text.size());
  if (doc.HasParseError()) {
    return InvalidArgumentError("not valid JSON at offset " + std::to_string(doc.GetErrorOffset()) +
                                ": " + rapidjson::GetParseError_En(doc.GetParseError()));
  }
  return Status::Ok();
}

}  // namespace dracpu
