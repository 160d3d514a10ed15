#include "tests/sim/apiserver/validation.h"

#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <string_view>

namespace dracpu::sim {
namespace {

// Upstream limits (resource.k8s.io/v1 types.go).
constexpr size_t kMaxDevices = 128;
constexpr size_t kMaxDevicesWithTaintsOrCounters = 64;  // also with list attributes
constexpr size_t kMaxAttributesAndCapacities = 32;
constexpr size_t kMaxAttributeValuesPerDevice = 48;  // list attributes count each element
constexpr size_t kMaxAttributeValueLength = 64;
constexpr size_t kMaxIdLength = 32;
constexpr size_t kMaxDomainLength = 63;
constexpr size_t kMaxDriverLength = 63;
constexpr size_t kMaxPoolNameLength = 253;
constexpr size_t kMaxValidValues = 10;

using rapidjson::Value;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

std::string DescribeValue(const Value& v) {
  if (v.IsString()) return Quoted(v.GetString());
  if (v.IsBool()) return v.GetBool() ? "true" : "false";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsNumber()) return std::to_string(v.GetDouble());
  if (v.IsNull()) return "null";
  return v.IsObject() ? "{...}" : "[...]";
}

class Errors {
 public:
  void Required(const std::string& field, const std::string& detail = "") {
    errors_.push_back({field, "Required value", "FieldValueRequired", detail});
  }
  void Invalid(const std::string& field, const std::string& value, const std::string& detail) {
    errors_.push_back({field, "Invalid value", "FieldValueInvalid", value + ": " + detail});
  }
  void TooMany(const std::string& field, size_t have, size_t max) {
    errors_.push_back(
        {field, "Too many", "FieldValueTooMany",
         std::to_string(have) + ": must have at most " + std::to_string(max) + " items"});
  }
  void TooLong(const std::string& field, size_t max) {
    errors_.push_back({field, "Too long", "FieldValueTooLong",
                       "may not be more than " + std::to_string(max) + " bytes"});
  }
  void Duplicate(const std::string& field, const std::string& value) {
    errors_.push_back({field, "Duplicate value", "FieldValueDuplicate", Quoted(value)});
  }
  void Forbidden(const std::string& field, const std::string& detail) {
    errors_.push_back({field, "Forbidden", "FieldValueForbidden", detail});
  }
  std::vector<FieldError> Take() { return std::move(errors_); }

 private:
  std::vector<FieldError> errors_;
};

const Value* Member(const Value& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

// A qualified name: "<C identifier>" or "<DNS subdomain>/<C identifier>".
void ValidateQualifiedName(const std::string& name, const std::string& field, Errors& e) {
  const size_t slash = name.find('/');
  const std::string id = slash == std::string::npos ? name : name.substr(slash + 1);
  if (slash != std::string::npos) {
    const std::string domain = name.substr(0, slash);
    if (domain.size() > kMaxDomainLength) {
      e.TooLong(field, kMaxDomainLength);
    } else if (!IsDnsSubdomain(domain)) {
      e.Invalid(field, Quoted(domain),
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character");
    }
  }
  if (id.empty()) {
    e.Required(field, "the identifier after the domain must not be empty");
  } else if (id.size() > kMaxIdLength) {
    e.TooLong(field, kMaxIdLength);
  } else if (!IsCIdentifier(id)) {
    e.Invalid(field, Quoted(id),
              "a valid C identifier must start with alphabetic character or '_', followed by a "
              "string of alphanumeric characters or '_'");
  }
}

void ValidateAttribute(const Value& attr, const std::string& field, Errors& e) {
  if (!attr.IsObject()) {
    e.Invalid(field, DescribeValue(attr), "must be an object");
    return;
  }
  static const char* const kTypes[] = {"int",  "bool",  "string",  "version",
                                       "ints", "bools", "strings", "versions"};
  int set = 0;
  for (const char* t : kTypes) set += Member(attr, t) != nullptr ? 1 : 0;
  if (set == 0) {
    e.Required(field, "exactly one value must be specified");
    return;
  }
  if (set > 1) {
    e.Invalid(field, "{...}", "exactly one value must be specified");
    return;
  }
  if (const Value* v = Member(attr, "int"); v != nullptr && !v->IsInt64()) {
    e.Invalid(field + ".int", DescribeValue(*v), "must be an integer");
  }
  if (const Value* v = Member(attr, "bool"); v != nullptr && !v->IsBool()) {
    e.Invalid(field + ".bool", DescribeValue(*v), "must be a boolean");
  }
  if (const Value* v = Member(attr, "string"); v != nullptr) {
    if (!v->IsString()) {
      e.Invalid(field + ".string", DescribeValue(*v), "must be a string");
    } else if (v->GetStringLength() > kMaxAttributeValueLength) {
      e.TooLong(field + ".string", kMaxAttributeValueLength);
    }
  }
  if (const Value* v = Member(attr, "version"); v != nullptr) {
    if (!v->IsString()) {
      e.Invalid(field + ".version", DescribeValue(*v), "must be a string");
    } else if (v->GetStringLength() > kMaxAttributeValueLength) {
      e.TooLong(field + ".version", kMaxAttributeValueLength);
    } else if (!IsSemver(v->GetString())) {
      e.Invalid(field + ".version", Quoted(v->GetString()),
                "must be a string compatible with semver.org spec 2.0.0");
    }
  }
  for (const char* list : {"ints", "bools", "strings", "versions"}) {
    const Value* v = Member(attr, list);
    if (v == nullptr) continue;
    if (!v->IsArray() || v->Empty()) {
      e.Invalid(field + "." + list, DescribeValue(*v), "must be a non-empty list");
      continue;
    }
    for (rapidjson::SizeType i = 0; i < v->Size(); ++i) {
      const Value& item = (*v)[i];
      const std::string f = field + "." + list + "[" + std::to_string(i) + "]";
      const std::string_view kind(list);
      const bool ok = kind == "ints"    ? item.IsInt64()
                      : kind == "bools" ? item.IsBool()
                                        : item.IsString();
      if (!ok) {
        e.Invalid(f, DescribeValue(item), "wrong type");
      } else if (item.IsString() && item.GetStringLength() > kMaxAttributeValueLength) {
        e.TooLong(f, kMaxAttributeValueLength);
      }
    }
  }
}

void ValidateCapacity(const Value& cap, const std::string& field, Errors& e) {
  const Value* value = Member(cap, "value");
  if (value == nullptr) {
    e.Required(field + ".value");
  } else if (!value->IsString() || !IsQuantity(value->GetString())) {
    e.Invalid(field + ".value", DescribeValue(*value), "must be a quantity");
  }
  const Value* policy = Member(cap, "requestPolicy");
  if (policy == nullptr) return;
  const std::string pf = field + ".requestPolicy";
  if (const Value* d = Member(*policy, "default");
      d != nullptr && (!d->IsString() || !IsQuantity(d->GetString()))) {
    e.Invalid(pf + ".default", DescribeValue(*d), "must be a quantity");
  }
  const Value* valid_values = Member(*policy, "validValues");
  const Value* valid_range = Member(*policy, "validRange");
  if (valid_values != nullptr && valid_range != nullptr) {
    e.Forbidden(
        pf,
        "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\"");
  }
  if (valid_values != nullptr) {
    if (!valid_values->IsArray()) {
      e.Invalid(pf + ".validValues", DescribeValue(*valid_values), "must be a list");
    } else if (valid_values->Size() > kMaxValidValues) {
      e.TooMany(pf + ".validValues", valid_values->Size(), kMaxValidValues);
    } else {
      for (rapidjson::SizeType i = 0; i < valid_values->Size(); ++i) {
        const Value& q = (*valid_values)[i];
        if (!q.IsString() || !IsQuantity(q.GetString())) {
          e.Invalid(pf + ".validValues[" + std::to_string(i) + "]", DescribeValue(q),
                    "must be a quantity");
        }
      }
    }
  }
  if (valid_range != nullptr) {
    const Value* min = Member(*valid_range, "min");
    if (min == nullptr) e.Required(pf + ".validRange.min");
    for (const char* k : {"min", "max", "step"}) {
      const Value* q = Member(*valid_range, k);
      if (q != nullptr && (!q->IsString() || !IsQuantity(q->GetString()))) {
        e.Invalid(pf + ".validRange." + k, DescribeValue(*q), "must be a quantity");
      }
    }
  }
}

void ValidateDevice(const Value& device, const std::string& field, bool per_device_nodes,
                    std::set<std::string>& names, Errors& e) {
  if (!device.IsObject()) {
    e.Invalid(field, DescribeValue(device), "must be an object");
    return;
  }
  const Value* name = Member(device, "name");
  if (name == nullptr || !name->IsString() || name->GetStringLength() == 0) {
    e.Required(field + ".name");
  } else if (!IsDnsLabel(name->GetString())) {
    e.Invalid(field + ".name", Quoted(name->GetString()),
              "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character");
  } else if (!names.insert(name->GetString()).second) {
    e.Duplicate(field + ".name", name->GetString());
  }
  size_t entries = 0;
  size_t values = 0;
  if (const Value* attrs = Member(device, "attributes")) {
    if (!attrs->IsObject()) {
      e.Invalid(field + ".attributes", DescribeValue(*attrs), "must be a map");
    } else {
      for (const auto& m : attrs->GetObject()) {
        const std::string key = m.name.GetString();
        const std::string f = field + ".attributes[" + key + "]";
        ValidateQualifiedName(key, f, e);
        ValidateAttribute(m.value, f, e);
        ++entries;
        size_t n = 1;
        for (const char* list : {"ints", "bools", "strings", "versions"}) {
          const Value* v = Member(m.value, list);
          if (v != nullptr && v->IsArray()) n = v->Size();
        }
        values += n;
      }
    }
  }
  if (values > kMaxAttributeValuesPerDevice) {
    e.TooMany(field + ".attributes", values, kMaxAttributeValuesPerDevice);
  }
  if (const Value* caps = Member(device, "capacity")) {
    if (!caps->IsObject()) {
      e.Invalid(field + ".capacity", DescribeValue(*caps), "must be a map");
    } else {
      for (const auto& m : caps->GetObject()) {
        const std::string key = m.name.GetString();
        const std::string f = field + ".capacity[" + key + "]";
        ValidateQualifiedName(key, f, e);
        ValidateCapacity(m.value, f, e);
        ++entries;
      }
    }
  }
  if (entries > kMaxAttributesAndCapacities) {
    e.TooMany(field + ".attributes", entries, kMaxAttributesAndCapacities);
  }
  if (const Value* v = Member(device, "allowMultipleAllocations"); v != nullptr && !v->IsBool()) {
    e.Invalid(field + ".allowMultipleAllocations", DescribeValue(*v), "must be a boolean");
  }
  int node_fields = 0;
  for (const char* k : {"nodeName", "nodeSelector", "allNodes"}) {
    if (Member(device, k) != nullptr) ++node_fields;
  }
  if (per_device_nodes && node_fields != 1) {
    e.Invalid(field, "{...}",
              "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
              "`perDeviceNodeSelection` is set to true in the ResourceSlice spec");
  } else if (!per_device_nodes && node_fields != 0) {
    e.Invalid(field, "{...}",
              "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
              "`perDeviceNodeSelection` is set to true in the ResourceSlice Spec");
  }
}

std::string StringAt(const Value& v, const char* a, const char* b = nullptr) {
  const Value* x = Member(v, a);
  if (x != nullptr && b != nullptr) x = Member(*x, b);
  return x != nullptr && x->IsString() ? std::string(x->GetString()) : std::string();
}

// A JSON shape: known members (nullptr = any value), array items, or map values.
struct Shape {
  std::map<std::string, const Shape*> members;
  const Shape* items = nullptr;   // for arrays of objects
  const Shape* values = nullptr;  // for maps with free keys
  bool is_map = false;
};

const Shape& SliceShape() {
  static const Shape* const shape = [] {
    auto* range = new Shape{{{"min", nullptr}, {"max", nullptr}, {"step", nullptr}}};
    auto* policy =
        new Shape{{{"default", nullptr}, {"validValues", nullptr}, {"validRange", range}}};
    auto* capacity = new Shape{{{"value", nullptr}, {"requestPolicy", policy}}};
    auto* attribute = new Shape{{{"int", nullptr},
                                 {"bool", nullptr},
                                 {"string", nullptr},
                                 {"version", nullptr},
                                 {"ints", nullptr},
                                 {"bools", nullptr},
                                 {"strings", nullptr},
                                 {"versions", nullptr}}};
    auto* attributes = new Shape{{}, nullptr, attribute, true};
    auto* capacities = new Shape{{}, nullptr, capacity, true};
    auto* device = new Shape{{{"name", nullptr},
                              {"attributes", attributes},
                              {"capacity", capacities},
                              {"allowMultipleAllocations", nullptr},
                              {"consumesCounters", nullptr},
                              {"nodeName", nullptr},
                              {"nodeSelector", nullptr},
                              {"allNodes", nullptr},
                              {"taints", nullptr},
                              {"bindsToNode", nullptr},
                              {"bindingConditions", nullptr},
                              {"bindingFailureConditions", nullptr},
                              {"nodeAllocatableResources", nullptr},
                              {"nodeAllocatableResourceMappings", nullptr}}};
    auto* devices = new Shape{{}, device};
    auto* pool =
        new Shape{{{"name", nullptr}, {"generation", nullptr}, {"resourceSliceCount", nullptr}}};
    auto* spec = new Shape{{{"driver", nullptr},
                            {"pool", pool},
                            {"nodeName", nullptr},
                            {"nodeSelector", nullptr},
                            {"allNodes", nullptr},
                            {"perDeviceNodeSelection", nullptr},
                            {"devices", devices},
                            {"sharedCounters", nullptr},
                            {"partitionTypeAttribute", nullptr},
                            {"skipNodeOperations", nullptr}}};
    auto* owner = new Shape{{{"apiVersion", nullptr},
                             {"kind", nullptr},
                             {"name", nullptr},
                             {"uid", nullptr},
                             {"controller", nullptr},
                             {"blockOwnerDeletion", nullptr}}};
    auto* owners = new Shape{{}, owner};
    auto* metadata = new Shape{{{"name", nullptr},
                                {"generateName", nullptr},
                                {"namespace", nullptr},
                                {"selfLink", nullptr},
                                {"uid", nullptr},
                                {"resourceVersion", nullptr},
                                {"generation", nullptr},
                                {"creationTimestamp", nullptr},
                                {"deletionTimestamp", nullptr},
                                {"deletionGracePeriodSeconds", nullptr},
                                {"labels", nullptr},
                                {"annotations", nullptr},
                                {"ownerReferences", owners},
                                {"finalizers", nullptr},
                                {"managedFields", nullptr}}};
    return new Shape{
        {{"apiVersion", nullptr}, {"kind", nullptr}, {"metadata", metadata}, {"spec", spec}}};
  }();
  return *shape;
}

void Prune(Value& v, const Shape& shape, const std::string& path,
           rapidjson::Document::AllocatorType& allocator, std::vector<std::string>& removed) {
  if (shape.items != nullptr) {
    if (!v.IsArray()) return;
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      Prune(v[i], *shape.items, path + "[" + std::to_string(i) + "]", allocator, removed);
    }
    return;
  }
  if (!v.IsObject()) return;
  if (shape.is_map) {
    for (auto& m : v.GetObject()) {
      Prune(m.value, *shape.values, path + "[" + m.name.GetString() + "]", allocator, removed);
    }
    return;
  }
  for (auto it = v.MemberBegin(); it != v.MemberEnd();) {
    const std::string key = it->name.GetString();
    const std::string child = path.empty() ? key : path + "." + key;
    auto known = shape.members.find(key);
    if (known == shape.members.end()) {
      removed.push_back(child);
      it = v.EraseMember(it);
      continue;
    }
    if (known->second != nullptr) Prune(it->value, *known->second, child, allocator, removed);
    ++it;
  }
}

void ValidateOwnerReferences(const Value& slice, Errors& e) {
  const Value* metadata = Member(slice, "metadata");
  const Value* owners = metadata == nullptr ? nullptr : Member(*metadata, "ownerReferences");
  if (owners == nullptr) return;
  if (!owners->IsArray()) {
    e.Invalid("metadata.ownerReferences", DescribeValue(*owners), "must be a list");
    return;
  }
  int controllers = 0;
  for (rapidjson::SizeType i = 0; i < owners->Size(); ++i) {
    const Value& o = (*owners)[i];
    const std::string f = "metadata.ownerReferences[" + std::to_string(i) + "]";
    for (const char* k : {"apiVersion", "kind", "name", "uid"}) {
      if (StringAt(o, k).empty())
        e.Invalid(f + "." + k, "\"\"", std::string(k) + " must not be empty");
    }
    const Value* controller = Member(o, "controller");
    if (controller != nullptr && controller->IsBool() && controller->GetBool()) ++controllers;
  }
  if (controllers > 1) {
    e.Invalid("metadata.ownerReferences", "[...]",
              "Only one reference can have Controller set to true");
  }
}

}  // namespace

std::vector<std::string> PruneUnknownSliceFields(rapidjson::Value& slice,
                                                 rapidjson::Document::AllocatorType& allocator) {
  std::vector<std::string> removed;
  Prune(slice, SliceShape(), "", allocator, removed);
  return removed;
}

std::string FieldError::ToString() const {
  return field + ": " + type + (detail.empty() ? "" : ": " + detail);
}

bool IsDnsLabel(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s, re);
}

bool IsDnsSubdomain(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, re);
}

bool IsCIdentifier(const std::string& s) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]*");
  return std::regex_match(s, re);
}

bool IsQuantity(const std::string& s) {
  // sign, digits with optional fraction, optional exponent or binary/decimal suffix.
  static const std::regex re(
      "[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?");
  return !s.empty() && std::regex_match(s, re);
}

bool IsSemver(const std::string& s) {
  static const std::regex re(
      "(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)"
      "(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?(\\+[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?");
  return std::regex_match(s, re);
}

std::vector<FieldError> ValidateResourceSlice(const Value& slice, const Value* old_slice) {
  Errors e;
  const std::string name = StringAt(slice, "metadata", "name");
  if (name.empty()) {
    e.Required("metadata.name", "name or generateName is required");
  } else if (!IsDnsSubdomain(name)) {
    e.Invalid("metadata.name", Quoted(name),
              "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
              "characters, '-' or '.', and must start and end with an alphanumeric character");
  }
  ValidateOwnerReferences(slice, e);
  const Value* spec = Member(slice, "spec");
  if (spec == nullptr || !spec->IsObject()) {
    e.Required("spec");
    return e.Take();
  }
  const std::string driver = StringAt(*spec, "driver");
  if (driver.empty()) {
    e.Required("spec.driver");
  } else if (driver.size() > kMaxDriverLength) {
    e.TooLong("spec.driver", kMaxDriverLength);
  } else if (!IsDnsSubdomain(driver)) {
    e.Invalid("spec.driver", Quoted(driver),
              "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
              "'-' or '.', and must start and end with an alphanumeric character");
  }
  const Value* pool = Member(*spec, "pool");
  if (pool == nullptr) {
    e.Required("spec.pool");
  } else {
    const std::string pool_name = StringAt(*pool, "name");
    if (pool_name.empty()) {
      e.Required("spec.pool.name");
    } else if (pool_name.size() > kMaxPoolNameLength) {
      e.TooLong("spec.pool.name", kMaxPoolNameLength);
    } else {
      size_t start = 0;
      while (start <= pool_name.size()) {
        size_t end = pool_name.find('/', start);
        if (end == std::string::npos) end = pool_name.size();
        if (!IsDnsSubdomain(pool_name.substr(start, end - start))) {
          e.Invalid("spec.pool.name", Quoted(pool_name),
                    "must be one or more DNS subdomains separated by slashes");
          break;
        }
        start = end + 1;
      }
    }
    const Value* generation = Member(*pool, "generation");
    if (generation != nullptr && (!generation->IsInt64() || generation->GetInt64() < 0)) {
      e.Invalid("spec.pool.generation", DescribeValue(*generation),
                "must be greater than or equal to 0");
    }
    const Value* count = Member(*pool, "resourceSliceCount");
    if (count == nullptr || !count->IsInt64() || count->GetInt64() <= 0) {
      e.Invalid("spec.pool.resourceSliceCount", count == nullptr ? "0" : DescribeValue(*count),
                "must be greater than zero");
    }
  }
  int node_fields = 0;
  const std::string node_name = StringAt(*spec, "nodeName");
  if (!node_name.empty()) {
    ++node_fields;
    if (!IsDnsSubdomain(node_name)) {
      e.Invalid("spec.nodeName", Quoted(node_name),
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character");
    }
  }
  if (Member(*spec, "nodeSelector") != nullptr) ++node_fields;
  const Value* all_nodes = Member(*spec, "allNodes");
  if (all_nodes != nullptr && all_nodes->IsBool() && all_nodes->GetBool()) ++node_fields;
  const Value* per_device = Member(*spec, "perDeviceNodeSelection");
  const bool per_device_nodes =
      per_device != nullptr && per_device->IsBool() && per_device->GetBool();
  if (per_device_nodes) ++node_fields;
  if (node_fields == 0) {
    e.Required("spec",
               "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
               "required");
  } else if (node_fields > 1) {
    e.Invalid("spec", "{...}",
              "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
              "required, but multiple fields are set");
  }
  const Value* devices = Member(*spec, "devices");
  if (devices != nullptr && Member(*spec, "sharedCounters") != nullptr && devices->IsArray() &&
      !devices->Empty()) {
    e.Forbidden("spec", "only one of `devices` and `sharedCounters` may be set");
  }
  if (devices != nullptr) {
    if (!devices->IsArray()) {
      e.Invalid("spec.devices", DescribeValue(*devices), "must be a list");
    } else {
      bool taints_or_counters = false;
      for (const Value& d : devices->GetArray()) {
        if (Member(d, "taints") != nullptr || Member(d, "consumesCounters") != nullptr)
          taints_or_counters = true;
        if (const Value* attrs = Member(d, "attributes"); attrs != nullptr && attrs->IsObject()) {
          for (const auto& m : attrs->GetObject()) {
            for (const char* list : {"ints", "bools", "strings", "versions"}) {
              if (Member(m.value, list) != nullptr) taints_or_counters = true;
            }
          }
        }
      }
      const size_t max = taints_or_counters ? kMaxDevicesWithTaintsOrCounters : kMaxDevices;
      if (devices->Size() > max) {
        e.TooMany("spec.devices", devices->Size(), max);
      } else {
        std::set<std::string> names;
        for (rapidjson::SizeType i = 0; i < devices->Size(); ++i) {
          ValidateDevice((*devices)[i], "spec.devices[" + std::to_string(i) + "]", per_device_nodes,
                         names, e);
        }
      }
    }
  }
  if (old_slice != nullptr) {
    const Value* old_spec = Member(*old_slice, "spec");
    if (old_spec != nullptr) {
      if (StringAt(*old_spec, "driver") != driver) {
        e.Invalid("spec.driver", Quoted(driver), "field is immutable");
      }
      if (StringAt(*old_spec, "nodeName") != node_name) {
        e.Invalid("spec.nodeName", Quoted(node_name), "field is immutable");
      }
      const std::string old_pool = StringAt(*old_spec, "pool", "name");
      const std::string new_pool = pool != nullptr ? StringAt(*pool, "name") : std::string();
      if (old_pool != new_pool) e.Invalid("spec.pool.name", Quoted(new_pool), "field is immutable");
    }
  }
  return e.Take();
}

}  // namespace dracpu::sim
