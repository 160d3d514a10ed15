#include "common/yaml_tree.h"

#include <yaml-cpp/yaml.h>

namespace dracpu {
namespace {

// Converts without catching; the single try block in ParseYaml catches for the whole tree.
YamlNode Convert(const YAML::Node& node) {
  YamlNode out;
  out.line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      out.kind = YamlNode::Kind::kScalar;
      out.scalar = node.Scalar();
      break;
    case YAML::NodeType::Sequence:
      out.kind = YamlNode::Kind::kSequence;
      for (const YAML::Node& item : node) out.items.push_back(Convert(item));
      break;
    case YAML::NodeType::Map:
      out.kind = YamlNode::Kind::kMap;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          throw YAML::ParserException(kv.first.Mark(), "map keys must be scalars");
        }
        out.map.push_back({kv.first.Scalar(), Convert(kv.second)});
      }
      break;
    default:
      out.kind = YamlNode::Kind::kNull;
      break;
  }
  return out;
}

}  // namespace

const YamlNode* YamlNode::Get(std::string_view key) const {
  if (kind != Kind::kMap) return nullptr;
  for (const YamlMapEntry& e : map) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

Result<YamlNode> ParseYaml(std::string_view text) {
  try {
    return Convert(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(std::string("YAML: ") + e.what());
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("YAML: ") + e.what());
  }
}

}  // namespace dracpu
