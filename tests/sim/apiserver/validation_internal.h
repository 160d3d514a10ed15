// Helpers shared by validation.cc (metadata, spec) and device_validation.cc (devices, counter
// sets). Simulator-internal.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>

#include "tests/sim/apiserver/feature_gates.h"
#include "tests/sim/apiserver/field_errors.h"

namespace dracpu::sim::internal {

using rapidjson::Value;

// The member `key` of an object, nullptr when absent or null (Go's nil).
inline const Value* Find(const Value& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

inline std::string StringOf(const Value* v) {
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : "";
}

// The number of items of an array member (0 when absent).
inline size_t SizeOf(const Value& v, const char* key) {
  const Value* a = Find(v, key);
  return a != nullptr && a->IsArray() ? a->Size() : 0;
}

// Upstream's ValidateCSIDriverName (spec.driver and attribute domains).
void ValidateDriverName(const std::string& name, const std::string& field, FieldErrors& e);
// ValidateNodeSelector (spec.nodeSelector and per-device nodeSelector).
void ValidateNodeSelector(const Value& selector, const std::string& field, FieldErrors& e);
// metav1validation.ValidateLabelName (taint keys, binding conditions).
void ValidateLabelName(const std::string& name, const std::string& field, FieldErrors& e);
// NameIsDNSSubdomain as a node name.
void ValidateNodeName(const std::string& name, const std::string& field, FieldErrors& e);
// DNS-1123 label checks as field errors (device, counter and counter-set names).
void ValidateDnsLabel(const std::string& name, const std::string& field, FieldErrors& e);

// One device of spec.devices; `old_device` the stored device of the same name on update.
void ValidateDevice(const Value& device, const Value* old_device, const std::string& field,
                    bool per_device_node_selection, const FeatureGates& gates, FieldErrors& e);
void ValidateCounterSet(const Value& set, const std::string& field, FieldErrors& e);

}  // namespace dracpu::sim::internal
