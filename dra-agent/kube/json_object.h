// JsonObject: one Kubernetes object (or any JSON value) as a RapidJSON Document, with the few
// metadata accessors the client and its users need. We keep objects as JSON rather than an object
// model: the publisher builds slices with RapidJSON and compares what the server returns.
//
// Copying deep-copies the document; moving is cheap. A default-constructed JsonObject holds an
// empty JSON object ({}).
// Thread safety: a value; distinct objects may be used from distinct threads.
#pragma once

#include <rapidjson/document.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dracpu::kube {

class JsonObject {
 public:
  JsonObject();
  JsonObject(const JsonObject& other);
  JsonObject& operator=(const JsonObject& other);
  JsonObject(JsonObject&&) noexcept = default;
  JsonObject& operator=(JsonObject&&) noexcept = default;
  ~JsonObject() = default;

  // Parses one JSON value by the rules of common/untrusted_json.h (depth, UTF-8, one value);
  // INVALID_ARGUMENT naming the offset on a syntax error.
  static Result<JsonObject> Parse(std::string_view text);

  rapidjson::Document& doc() { return *doc_; }
  const rapidjson::Document& doc() const { return *doc_; }
  rapidjson::Document::AllocatorType& allocator() { return doc_->GetAllocator(); }

  // Compact JSON text.
  std::string ToString() const;

  // metadata.* strings; "" when absent or not a string.
  std::string Name() const { return MetadataString("name"); }
  std::string Uid() const { return MetadataString("uid"); }
  std::string ResourceVersion() const { return MetadataString("resourceVersion"); }
  std::string Kind() const;
  std::string MetadataString(std::string_view key) const;

  // Sets metadata.<key> (creating metadata when absent).
  void SetMetadataString(std::string_view key, std::string_view value);

  // The value at a '.'-separated path of object members ("spec.pool.name"), or nullptr.
  const rapidjson::Value* Find(std::string_view dotted_path) const;

 private:
  std::unique_ptr<rapidjson::Document> doc_;
};

// The member `key` of object `v` as a string, or "" when absent or not a string.
std::string_view StringMember(const rapidjson::Value& v, std::string_view key);

}  // namespace dracpu::kube
