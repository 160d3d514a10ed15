// The one place yaml-cpp is called. yaml-cpp throws; this adapter catches and turns a document
// into a plain tree (YamlNode) that cannot throw, so its readers (the kubeconfig, the driver
// config file, the sysfs overlay) handle errors as values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dracpu {

struct YamlMapEntry;

struct YamlNode {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  std::string scalar;             // kScalar
  std::vector<YamlNode> items;    // kSequence
  std::vector<YamlMapEntry> map;  // kMap, in document order
  int line = 0;                   // 1-based, 0 when unknown

  // The value of `key` in a map, or nullptr (also when this is not a map).
  const YamlNode* Get(std::string_view key) const;
};

// A named struct rather than std::pair<std::string, YamlNode>: a pair member needs YamlNode
// complete where YamlNode is still being defined (libstdc++ with clang refuses it).
struct YamlMapEntry {
  std::string key;
  YamlNode value;
};

// Parses one YAML document; INVALID_ARGUMENT with yaml-cpp's line/column message on error.
// Map keys must be scalars.
Result<YamlNode> ParseYaml(std::string_view text);

}  // namespace dracpu
