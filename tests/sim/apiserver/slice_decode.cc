#include "tests/sim/apiserver/slice_decode.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <optional>

#include "tests/sim/apiserver/quantity.h"

namespace dracpu::sim {
namespace {

using rapidjson::Value;

// The Go types of resource.k8s.io/v1 ResourceSlice, as the decoder sees them.
struct Node;
struct Member {
  const char* name;
  const Node* node;
  std::optional<Gate> gate;  // the field exists only in versions that have this gate
};
struct Node {
  enum class Kind { kString, kInt, kBool, kQuantity, kObject, kMap, kArray, kAny };
  Kind kind;
  const char* go_type;  // for messages: "int64", "v1.Device", "map[string]string"
  std::vector<Member> members;
  const Node* element = nullptr;  // map values, array items
};

const Node* Leaf(Node::Kind kind, const char* go_type) { return new Node{kind, go_type, {}}; }
const Node* Object(const char* go_type, std::vector<Member> members) {
  return new Node{Node::Kind::kObject, go_type, std::move(members)};
}
const Node* MapOf(const char* go_type, const Node* value) {
  return new Node{Node::Kind::kMap, go_type, {}, value};
}
const Node* ArrayOf(const char* go_type, const Node* item) {
  return new Node{Node::Kind::kArray, go_type, {}, item};
}

const Node& SliceSchema() {
  static const Node* const root = [] {
    using K = Node::Kind;
    const Node* str = Leaf(K::kString, "string");
    const Node* i64 = Leaf(K::kInt, "int64");
    const Node* boolean = Leaf(K::kBool, "bool");
    const Node* quantity = Leaf(K::kQuantity, "resource.Quantity");
    const Node* any = Leaf(K::kAny, "interface {}");
    const Node* strings = ArrayOf("[]string", str);
    const Node* requirement =
        Object("v1.NodeSelectorRequirement",
               {{"key", str, {}}, {"operator", str, {}}, {"values", strings, {}}});
    const Node* requirements = ArrayOf("[]v1.NodeSelectorRequirement", requirement);
    const Node* term = Object("v1.NodeSelectorTerm", {{"matchExpressions", requirements, {}},
                                                      {"matchFields", requirements, {}}});
    const Node* selector = Object(
        "v1.NodeSelector", {{"nodeSelectorTerms", ArrayOf("[]v1.NodeSelectorTerm", term), {}}});
    const Gate lists = Gate::kListTypeAttributes;
    const Node* attribute =
        Object("v1.DeviceAttribute", {{"int", i64, {}},
                                      {"bool", boolean, {}},
                                      {"string", str, {}},
                                      {"version", str, {}},
                                      {"ints", ArrayOf("[]int64", i64), lists},
                                      {"bools", ArrayOf("[]bool", boolean), lists},
                                      {"strings", strings, lists},
                                      {"versions", strings, lists}});
    const Node* range =
        Object("v1.CapacityRequestPolicyRange",
               {{"min", quantity, {}}, {"max", quantity, {}}, {"step", quantity, {}}});
    const Node* policy = Object("v1.CapacityRequestPolicy",
                                {{"default", quantity, {}},
                                 {"validValues", ArrayOf("[]resource.Quantity", quantity), {}},
                                 {"validRange", range, {}}});
    const Gate consumable = Gate::kConsumableCapacity;
    const Node* capacity = Object("v1.DeviceCapacity",
                                  {{"value", quantity, {}}, {"requestPolicy", policy, consumable}});
    const Node* counter = Object("v1.Counter", {{"value", quantity, {}}});
    const Node* counters = MapOf("map[string]v1.Counter", counter);
    const Node* consumption =
        Object("v1.DeviceCounterConsumption",
               {{"counterSet", str, {}},
                {"counters", counters, {}},
                {"compatibilityGroups", strings, Gate::kDeviceCompatibilityGroups}});
    const Node* taint =
        Object("v1.DeviceTaint",
               {{"key", str, {}}, {"value", str, {}}, {"effect", str, {}}, {"timeAdded", str, {}}});
    const Node* mapping = Object("v1.NodeAllocatableMapping", {{"capacityKey", str, {}},
                                                               {"capacityMultiplier", quantity, {}},
                                                               {"deviceMultiplier", quantity, {}}});
    const Node* overhead = Object("v1.NodeAllocatableOverhead",
                                  {{"perPod", quantity, {}}, {"perContainer", quantity, {}}});
    const Node* node_allocatable = Object("v1.NodeAllocatableResource",
                                          {{"mapping", mapping, {}}, {"overhead", overhead, {}}});
    const Gate partitionable = Gate::kPartitionableDevices;
    const Gate binding = Gate::kDeviceBindingConditions;
    const Node* device = Object(
        "v1.Device",
        {{"name", str, {}},
         {"attributes", MapOf("map[v1.QualifiedName]v1.DeviceAttribute", attribute), {}},
         {"capacity", MapOf("map[v1.QualifiedName]v1.DeviceCapacity", capacity), {}},
         {"consumesCounters", ArrayOf("[]v1.DeviceCounterConsumption", consumption), partitionable},
         {"nodeName", str, partitionable},
         {"nodeSelector", selector, partitionable},
         {"allNodes", boolean, partitionable},
         {"taints", ArrayOf("[]v1.DeviceTaint", taint), Gate::kDeviceTaints},
         {"bindsToNode", boolean, binding},
         {"bindingConditions", strings, binding},
         {"bindingFailureConditions", strings, binding},
         {"allowMultipleAllocations", boolean, consumable},
         {"nodeAllocatableResources",
          MapOf("map[v1.ResourceName]v1.NodeAllocatableResource", node_allocatable),
          Gate::kNodeAllocatableResources}});
    const Node* counter_set =
        Object("v1.CounterSet", {{"name", str, {}}, {"counters", counters, {}}});
    const Node* pool =
        Object("v1.ResourcePool",
               {{"name", str, {}}, {"generation", i64, {}}, {"resourceSliceCount", i64, {}}});
    const Node* spec =
        Object("v1.ResourceSliceSpec",
               {{"driver", str, {}},
                {"pool", pool, {}},
                {"nodeName", str, {}},
                {"nodeSelector", selector, {}},
                {"allNodes", boolean, {}},
                {"perDeviceNodeSelection", boolean, partitionable},
                {"devices", ArrayOf("[]v1.Device", device), {}},
                {"sharedCounters", ArrayOf("[]v1.CounterSet", counter_set), partitionable},
                {"partitionTypeAttribute", str, Gate::kPartitionableDevicesType},
                {"skipNodeOperations", strings, Gate::kOptionalNodeOperations}});
    const Node* owner = Object("v1.OwnerReference", {{"apiVersion", str, {}},
                                                     {"kind", str, {}},
                                                     {"name", str, {}},
                                                     {"uid", str, {}},
                                                     {"controller", boolean, {}},
                                                     {"blockOwnerDeletion", boolean, {}}});
    const Node* string_map = MapOf("map[string]string", str);
    const Node* metadata =
        Object("v1.ObjectMeta", {{"name", str, {}},
                                 {"generateName", str, {}},
                                 {"namespace", str, {}},
                                 {"selfLink", str, {}},
                                 {"uid", str, {}},
                                 {"resourceVersion", str, {}},
                                 {"generation", i64, {}},
                                 {"creationTimestamp", str, {}},
                                 {"deletionTimestamp", str, {}},
                                 {"deletionGracePeriodSeconds", i64, {}},
                                 {"labels", string_map, {}},
                                 {"annotations", string_map, {}},
                                 {"ownerReferences", ArrayOf("[]v1.OwnerReference", owner), {}},
                                 {"finalizers", strings, {}},
                                 {"managedFields", ArrayOf("[]v1.ManagedFieldsEntry", any), {}}});
    return Object("v1.ResourceSlice", {{"apiVersion", str, {}},
                                       {"kind", str, {}},
                                       {"metadata", metadata, {}},
                                       {"spec", spec, {}}});
  }();
  return *root;
}

std::string JsonTypeName(const Value& v) {
  if (v.IsString()) return "string";
  if (v.IsBool()) return "bool";
  if (v.IsNumber()) {
    if (v.IsInt64()) return "number";
    rapidjson::StringBuffer b;
    rapidjson::Writer<rapidjson::StringBuffer> w(b);
    v.Accept(w);
    return std::string("number ") + b.GetString();
  }
  if (v.IsArray()) return "array";
  return "object";
}

std::string NumberText(const Value& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  v.Accept(w);
  return b.GetString();
}

class Decoder {
 public:
  Decoder(rapidjson::Document::AllocatorType& allocator, const FeatureGates& gates)
      : allocator_(allocator), gates_(gates) {}

  // `path` for unknown-field messages ("spec.devices[0].x"), `go_path` for type errors
  // ("spec.devices.x"), `go_struct` the enclosing Go struct ("Device").
  void Walk(Value& v, const Node& node, const std::string& path, const std::string& go_path,
            const char* go_struct) {
    if (!error_.empty() || v.IsNull()) return;  // null is a zero value: always fine
    using K = Node::Kind;
    switch (node.kind) {
      case K::kAny:
        return;
      case K::kString:
        if (!v.IsString()) TypeError(v, node, go_path, go_struct);
        return;
      case K::kInt:
        if (!v.IsInt64()) TypeError(v, node, go_path, go_struct);
        return;
      case K::kBool:
        if (!v.IsBool()) TypeError(v, node, go_path, go_struct);
        return;
      case K::kQuantity: {
        std::string text;
        if (v.IsString()) {
          text = v.GetString();
        } else if (v.IsNumber()) {
          text = NumberText(v);
        } else {
          error_ = "quantities must be a JSON string or number";  // upstream: ErrFormatWrong
          return;
        }
        std::string why;
        if (!Quantity::Parse(text, &why)) {
          error_ = why;
          return;
        }
        if (!v.IsString())
          v.SetString(text.c_str(), static_cast<rapidjson::SizeType>(text.size()), allocator_);
        return;
      }
      case K::kArray:
        if (!v.IsArray()) {
          TypeError(v, node, go_path, go_struct);
          return;
        }
        for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
          Walk(v[i], *node.element, Index(path, i), go_path, go_struct);
        }
        return;
      case K::kMap:
        if (!v.IsObject()) {
          TypeError(v, node, go_path, go_struct);
          return;
        }
        for (auto& m : v.GetObject()) {
          Walk(m.value, *node.element, Key(path, m.name.GetString()), go_path, go_struct);
        }
        return;
      case K::kObject:
        WalkObject(v, node, path, go_path);
        return;
    }
  }

  DecodeResult Take() { return {std::move(error_), std::move(unknown_)}; }

 private:
  static std::string Index(const std::string& p, rapidjson::SizeType i) {
    return p + "[" + std::to_string(i) + "]";
  }
  static std::string Key(const std::string& p, const char* k) { return p + "[" + k + "]"; }

  void WalkObject(Value& v, const Node& node, const std::string& path, const std::string& go_path) {
    if (!v.IsObject()) {
      error_ =
          "json: cannot unmarshal " + JsonTypeName(v) + " into Go value of type " + node.go_type;
      return;
    }
    const char* go_struct = node.go_type + (std::string_view(node.go_type).find('.') + 1);
    for (auto it = v.MemberBegin(); it != v.MemberEnd();) {
      const std::string name = it->name.GetString();
      const Member* member = nullptr;
      for (const Member& m : node.members) {
        if (name == m.name) member = &m;
      }
      const std::string child = path.empty() ? name : path + "." + name;
      if (member == nullptr || (member->gate && !gates_.Exists(*member->gate))) {
        unknown_.push_back(child);
        it = v.EraseMember(it);
        continue;
      }
      const std::string go_child = go_path.empty() ? name : go_path + "." + name;
      Walk(it->value, *member->node, child, go_child, go_struct);
      ++it;
    }
  }

  void TypeError(const Value& v, const Node& node, const std::string& go_path,
                 const char* go_struct) {
    error_ = "json: cannot unmarshal " + JsonTypeName(v) + " into Go struct field " + go_struct +
             "." + go_path + " of type " + node.go_type;
  }

  rapidjson::Document::AllocatorType& allocator_;
  const FeatureGates& gates_;
  std::string error_;
  std::vector<std::string> unknown_;
};

const Value* Find(const Value& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

// Calls f(device, "spec.devices[i]") for every device object of a slice.
template <typename V, typename F>
void ForEachDevice(V& slice, F f) {
  if (!slice.IsObject()) return;
  auto spec = slice.FindMember("spec");
  if (spec == slice.MemberEnd() || !spec->value.IsObject()) return;
  auto devices = spec->value.FindMember("devices");
  if (devices == spec->value.MemberEnd() || !devices->value.IsArray()) return;
  for (rapidjson::SizeType i = 0; i < devices->value.Size(); ++i) {
    if (devices->value[i].IsObject()) {
      f(devices->value[i], "spec.devices[" + std::to_string(i) + "]");
    }
  }
}

constexpr const char* kListForms[] = {"ints", "bools", "strings", "versions"};

// Whether `slice` uses the feature of `gate` (for ratcheting on update).
bool Uses(const Value& slice, Gate gate) {
  const Value* spec = Find(slice, "spec");
  bool used = false;
  auto device_has = [&](std::initializer_list<const char*> keys) {
    ForEachDevice(slice, [&](const Value& d, const std::string&) {
      for (const char* k : keys) used = used || Find(d, k) != nullptr;
    });
  };
  switch (gate) {
    case Gate::kConsumableCapacity:
      device_has({"allowMultipleAllocations"});
      ForEachDevice(slice, [&](const Value& d, const std::string&) {
        if (const Value* caps = Find(d, "capacity"); caps != nullptr && caps->IsObject()) {
          for (const auto& c : caps->GetObject()) used = used || Find(c.value, "requestPolicy");
        }
      });
      break;
    case Gate::kPartitionableDevices:
      used = spec != nullptr &&
             (Find(*spec, "sharedCounters") != nullptr || Find(*spec, "perDeviceNodeSelection"));
      device_has({"consumesCounters", "nodeName", "nodeSelector", "allNodes"});
      break;
    case Gate::kDeviceTaints:
      device_has({"taints"});
      break;
    case Gate::kDeviceBindingConditions:
      device_has({"bindsToNode", "bindingConditions", "bindingFailureConditions"});
      break;
    case Gate::kListTypeAttributes:
      ForEachDevice(slice, [&](const Value& d, const std::string&) {
        if (const Value* attrs = Find(d, "attributes"); attrs != nullptr && attrs->IsObject()) {
          for (const auto& a : attrs->GetObject()) {
            for (const char* k : kListForms) used = used || Find(a.value, k) != nullptr;
          }
        }
      });
      break;
    case Gate::kNodeAllocatableResources:
      device_has({"nodeAllocatableResources"});
      break;
    case Gate::kPartitionableDevicesType:
      used = spec != nullptr && Find(*spec, "partitionTypeAttribute") != nullptr;
      break;
    case Gate::kOptionalNodeOperations:
      used = spec != nullptr && Find(*spec, "skipNodeOperations") != nullptr;
      break;
    case Gate::kDeviceCompatibilityGroups:
      ForEachDevice(slice, [&](const Value& d, const std::string&) {
        if (const Value* cc = Find(d, "consumesCounters"); cc != nullptr && cc->IsArray()) {
          for (const Value& c : cc->GetArray()) used = used || Find(c, "compatibilityGroups");
        }
      });
      break;
    case Gate::kFractionalCapacityRange:
    case Gate::kResourceClaimDeviceStatus:
      break;
  }
  return used;
}

// Removes `key` from `obj` when present (and not null), recording `path`.
void Drop(Value& obj, const char* key, const std::string& path, std::vector<std::string>& out) {
  if (!obj.IsObject()) return;
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd()) return;
  if (!it->value.IsNull()) out.push_back(path.empty() ? key : path + "." + key);
  obj.EraseMember(it);
}

}  // namespace

DecodeResult DecodeResourceSlice(Value& slice, rapidjson::Document::AllocatorType& allocator,
                                 const FeatureGates& gates) {
  Decoder decoder(allocator, gates);
  decoder.Walk(slice, SliceSchema(), "", "", "ResourceSlice");
  DecodeResult r = decoder.Take();
  if (!r.error.empty()) {
    r.error = "ResourceSlice in version \"v1\" cannot be handled as a ResourceSlice: " + r.error;
  }
  return r;
}

std::vector<std::string> DropDisabledFields(Value& slice, const Value* old_slice,
                                            const FeatureGates& gates) {
  std::vector<std::string> dropped;
  auto off = [&](Gate g) {
    return gates.Exists(g) && !gates.Enabled(g) && (old_slice == nullptr || !Uses(*old_slice, g));
  };
  auto spec_it = slice.IsObject() ? slice.FindMember("spec") : slice.MemberEnd();
  Value* spec = slice.IsObject() && spec_it != slice.MemberEnd() ? &spec_it->value : nullptr;
  if (off(Gate::kPartitionableDevices) && spec != nullptr) {
    Drop(*spec, "sharedCounters", "spec", dropped);
    Drop(*spec, "perDeviceNodeSelection", "spec", dropped);
  }
  if (off(Gate::kPartitionableDevicesType) && spec != nullptr) {
    Drop(*spec, "partitionTypeAttribute", "spec", dropped);
  }
  if (off(Gate::kOptionalNodeOperations) && spec != nullptr) {
    Drop(*spec, "skipNodeOperations", "spec", dropped);
  }
  ForEachDevice(slice, [&](Value& d, const std::string& path) {
    if (off(Gate::kPartitionableDevices)) {
      for (const char* k : {"consumesCounters", "nodeName", "nodeSelector", "allNodes"}) {
        Drop(d, k, path, dropped);
      }
    }
    if (off(Gate::kDeviceCompatibilityGroups)) {
      auto cc = d.FindMember("consumesCounters");
      if (cc != d.MemberEnd() && cc->value.IsArray()) {
        for (rapidjson::SizeType i = 0; i < cc->value.Size(); ++i) {
          Drop(cc->value[i], "compatibilityGroups",
               path + ".consumesCounters[" + std::to_string(i) + "]", dropped);
        }
      }
    }
    if (off(Gate::kDeviceTaints)) Drop(d, "taints", path, dropped);
    if (off(Gate::kDeviceBindingConditions)) {
      for (const char* k : {"bindsToNode", "bindingConditions", "bindingFailureConditions"}) {
        Drop(d, k, path, dropped);
      }
    }
    if (off(Gate::kConsumableCapacity)) {
      Drop(d, "allowMultipleAllocations", path, dropped);
      auto caps = d.FindMember("capacity");
      if (caps != d.MemberEnd() && caps->value.IsObject()) {
        for (auto& c : caps->value.GetObject()) {
          Drop(c.value, "requestPolicy", path + ".capacity[" + c.name.GetString() + "]", dropped);
        }
      }
    }
    if (off(Gate::kListTypeAttributes)) {
      auto attrs = d.FindMember("attributes");
      if (attrs != d.MemberEnd() && attrs->value.IsObject()) {
        for (auto& a : attrs->value.GetObject()) {
          for (const char* k : kListForms) {
            Drop(a.value, k, path + ".attributes[" + a.name.GetString() + "]", dropped);
          }
        }
      }
    }
    if (off(Gate::kNodeAllocatableResources)) Drop(d, "nodeAllocatableResources", path, dropped);
  });
  return dropped;
}

}  // namespace dracpu::sim
