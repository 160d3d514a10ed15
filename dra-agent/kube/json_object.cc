#include "dra-agent/kube/json_object.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "common/untrusted_json.h"

namespace dracpu::kube {

JsonObject::JsonObject() : doc_(std::make_unique<rapidjson::Document>()) { doc_->SetObject(); }

JsonObject::JsonObject(const JsonObject& other) : JsonObject() {
  doc_->CopyFrom(*other.doc_, doc_->GetAllocator());
}

JsonObject& JsonObject::operator=(const JsonObject& other) {
  if (this != &other) {
    auto copy = std::make_unique<rapidjson::Document>();
    copy->CopyFrom(*other.doc_, copy->GetAllocator());
    doc_ = std::move(copy);
  }
  return *this;
}

Result<JsonObject> JsonObject::Parse(std::string_view text) {
  JsonObject object;
  RETURN_IF_ERROR(ParseUntrustedJson(text, *object.doc_));
  return object;
}

std::string JsonObject::ToString() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc_->Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string_view StringMember(const rapidjson::Value& v, std::string_view key) {
  if (!v.IsObject()) return {};
  auto it = v.FindMember(rapidjson::Value(rapidjson::StringRef(key.data(), key.size())));
  if (it == v.MemberEnd() || !it->value.IsString()) return {};
  return std::string_view(it->value.GetString(), it->value.GetStringLength());
}

std::string JsonObject::Kind() const { return std::string(StringMember(*doc_, "kind")); }

std::string JsonObject::MetadataString(std::string_view key) const {
  const rapidjson::Value* metadata = Find("metadata");
  return metadata == nullptr ? std::string() : std::string(StringMember(*metadata, key));
}

void JsonObject::SetMetadataString(std::string_view key, std::string_view value) {
  auto& alloc = doc_->GetAllocator();
  if (!doc_->IsObject()) doc_->SetObject();
  auto metadata = doc_->FindMember("metadata");
  if (metadata == doc_->MemberEnd() || !metadata->value.IsObject()) {
    if (metadata != doc_->MemberEnd()) doc_->RemoveMember(metadata);
    doc_->AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), alloc);
    metadata = doc_->FindMember("metadata");
  }
  rapidjson::Value& m = metadata->value;
  rapidjson::Value v(value.data(), static_cast<rapidjson::SizeType>(value.size()), alloc);
  auto it = m.FindMember(rapidjson::Value(rapidjson::StringRef(key.data(), key.size())));
  if (it != m.MemberEnd()) {
    it->value = v;
  } else {
    m.AddMember(rapidjson::Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), alloc),
                v, alloc);
  }
}

const rapidjson::Value* JsonObject::Find(std::string_view dotted_path) const {
  const rapidjson::Value* v = doc_.get();
  while (!dotted_path.empty()) {
    const size_t dot = dotted_path.find('.');
    const std::string_view key = dotted_path.substr(0, dot);
    if (!v->IsObject()) return nullptr;
    auto it = v->FindMember(rapidjson::Value(rapidjson::StringRef(key.data(), key.size())));
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
    dotted_path = dot == std::string_view::npos ? std::string_view() : dotted_path.substr(dot + 1);
  }
  return v;
}

}  // namespace dracpu::kube
