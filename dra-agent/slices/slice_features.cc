#include "dra-agent/slices/slice_features.h"

#include <map>

#include "dra-agent/kube/resources.h"

namespace dracpu::dra {
namespace {

using kube::FeatureState;
using kube::ServerFeature;
using rapidjson::Value;

constexpr char kPcieRoot[] = "resource.kubernetes.io/pcieRoot";

const Value* Member(const Value& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

// The one device of a probe slice, per feature; each uses only that feature's fields.
std::string ProbeDevice(ServerFeature feature) {
  switch (feature) {
    case ServerFeature::kConsumableCapacity:
      return R"({"name":"probe","allowMultipleAllocations":true,"capacity":{"dra.cpu/cpu":{)"
             R"("value":"2","requestPolicy":{"default":"2","validRange":{"min":"1","max":"2",)"
             R"("step":"1"}}}}})";
    case ServerFeature::kListTypeAttributes:
      return std::string(R"({"name":"probe","attributes":{")") + kPcieRoot +
             R"(":{"strings":["pci0000:00"]}}})";
    case ServerFeature::kNodeAllocatableResources:
      return R"({"name":"probe","capacity":{"dra.cpu/cpu":{"value":"1"}},)"
             R"("nodeAllocatableResources":{"cpu":{"mapping":{"capacityKey":"dra.cpu/cpu",)"
             R"("capacityMultiplier":"1"}}}})";
    case ServerFeature::kResourceClaimDeviceStatus:
      break;
  }
  return "";
}

// Whether the probe's field came back in the server's answer.
bool ProbeFieldKept(ServerFeature feature, const Value& returned) {
  const Value* spec = Member(returned, "spec");
  const Value* devices = spec == nullptr ? nullptr : Member(*spec, "devices");
  if (devices == nullptr || !devices->IsArray() || devices->Empty()) return false;
  const Value& d = (*devices)[0];
  switch (feature) {
    case ServerFeature::kConsumableCapacity: {
      const Value* caps = Member(d, "capacity");
      const Value* cpu = caps == nullptr ? nullptr : Member(*caps, kCpuCapacityName);
      return Member(d, "allowMultipleAllocations") != nullptr && cpu != nullptr &&
             Member(*cpu, "requestPolicy") != nullptr;
    }
    case ServerFeature::kListTypeAttributes: {
      const Value* attrs = Member(d, "attributes");
      const Value* root = attrs == nullptr ? nullptr : Member(*attrs, kPcieRoot);
      return root != nullptr && Member(*root, "strings") != nullptr;
    }
    case ServerFeature::kNodeAllocatableResources:
      return Member(d, "nodeAllocatableResources") != nullptr;
    case ServerFeature::kResourceClaimDeviceStatus:
      break;
  }
  return false;
}

// A refusal that means "the server dropped the probed field": a list attribute left without a
// value, or (fieldValidation=Strict on a server too old to know the field) an unknown field.
bool RefusalMeansDropped(ServerFeature feature, const kube::ApiErrorDetails& d) {
  if (d.http_status == 400 && d.message.find("unknown field") != std::string::npos) return true;
  if (feature != ServerFeature::kListTypeAttributes || d.http_status != 422) return false;
  for (const kube::ApiErrorCause& c : d.causes) {
    if (c.field.find(kPcieRoot) != std::string::npos &&
        c.message.find("exactly one value must be specified") != std::string::npos) {
      return true;
    }
  }
  return false;
}

std::string Names(const std::vector<std::string>& names, size_t max = 4) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max) out += " and " + std::to_string(names.size() - max) + " more";
  return out;
}

std::string Why(const kube::ServerFeatures& features, ServerFeature f) {
  const kube::FeatureFinding finding = features.Finding(f);
  const std::string gate(kube::ServerFeatureGate(f));
  if (finding.state == FeatureState::kUnknown) return gate + " not known to be on";
  return "the API server drops these fields (" + gate + " off: " + finding.evidence + ")";
}

}  // namespace

SliceShape ShapeFor(const kube::ServerFeatures& features) {
  SliceShape s;
  s.consumable_capacity = features.Kept(ServerFeature::kConsumableCapacity);
  s.list_attributes = features.Kept(ServerFeature::kListTypeAttributes);
  s.node_allocatable = features.Kept(ServerFeature::kNodeAllocatableResources);
  return s;
}

std::vector<ServerFeature> FeaturesNeeded(const DeviceCatalog& catalog) {
  bool policy = false, lists = false;
  for (const CatalogDevice& d : catalog.devices) {
    policy = policy || d.capacity_policy.has_value() || d.allow_multiple_allocations;
    lists = lists || d.uses_list_attributes;
  }
  std::vector<ServerFeature> out;
  if (policy) out.push_back(ServerFeature::kConsumableCapacity);
  if (lists) out.push_back(ServerFeature::kListTypeAttributes);
  if (catalog.options.publish_node_allocatable_mapping) {
    out.push_back(ServerFeature::kNodeAllocatableResources);
  }
  return out;
}

Status ProbeSliceFeatures(kube::KubeClient& client, const std::string& node,
                          const std::vector<ServerFeature>& which, kube::ServerFeatures& features,
                          kube::ApiErrorDetails* error_details) {
  for (ServerFeature f : which) {
    const std::string device = ProbeDevice(f);
    if (device.empty()) continue;
    const std::string text =
        R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":)"
        R"({"generateName":"dracpu-probe-)" +
        node + R"(-"},"spec":{"driver":"dra.cpu","nodeName":")" + node + R"(","pool":{"name":")" +
        node + R"(","generation":0,"resourceSliceCount":1},"devices":[)" + device + "]}}";
    ASSIGN_OR_RETURN(const kube::JsonObject body, kube::JsonObject::Parse(text));
    kube::ApiErrorDetails details;
    Result<kube::JsonObject> answer =
        client.Create(kube::kResourceSlicesPath, body, &details, /*dry_run=*/true);
    const std::string gate(kube::ServerFeatureGate(f));
    if (answer.ok()) {
      const bool kept = ProbeFieldKept(f, answer->doc());
      features.Learn(f, kept ? FeatureState::kKept : FeatureState::kDropped,
                     kept ? "a dry-run ResourceSlice kept its " + gate + " fields"
                          : "a dry-run ResourceSlice came back without its " + gate + " fields");
    } else if (RefusalMeansDropped(f, details)) {
      features.Learn(f, FeatureState::kDropped,
                     "a dry-run ResourceSlice using " + gate + " fields was refused: " +
                         (details.causes.empty()
                              ? details.message
                              : details.causes[0].field + ": " + details.causes[0].message));
    } else {
      if (error_details != nullptr) *error_details = details;
      return answer.status().WithContext("probing " + gate + " with a dry-run ResourceSlice");
    }
  }
  return Status::Ok();
}

std::vector<DroppedField> FindDroppedFields(const Value& sent, const Value& returned) {
  std::vector<DroppedField> out;
  const Value* sent_spec = Member(sent, "spec");
  const Value* sent_devices = sent_spec == nullptr ? nullptr : Member(*sent_spec, "devices");
  const Value* ret_spec = Member(returned, "spec");
  const Value* ret_devices = ret_spec == nullptr ? nullptr : Member(*ret_spec, "devices");
  if (sent_devices == nullptr || !sent_devices->IsArray()) return out;
  std::map<std::string, const Value*> by_name;
  if (ret_devices != nullptr && ret_devices->IsArray()) {
    for (const Value& d : ret_devices->GetArray()) {
      if (const Value* n = Member(d, "name"); n != nullptr && n->IsString()) {
        by_name[n->GetString()] = &d;
      }
    }
  }
  static const Value kEmpty(rapidjson::kObjectType);
  for (rapidjson::SizeType i = 0; i < sent_devices->Size(); ++i) {
    const Value& d = (*sent_devices)[i];
    const Value* n = Member(d, "name");
    if (n == nullptr || !n->IsString()) continue;
    auto it = by_name.find(n->GetString());
    const Value& r = it == by_name.end() ? kEmpty : *it->second;
    const std::string path = "spec.devices[" + std::to_string(i) + "]";
    auto missing = [&](const Value& a, const Value& b, const char* key) {
      return Member(a, key) != nullptr && Member(b, key) == nullptr;
    };
    if (missing(d, r, "allowMultipleAllocations")) {
      out.push_back({ServerFeature::kConsumableCapacity, path + ".allowMultipleAllocations"});
    }
    if (missing(d, r, "nodeAllocatableResources")) {
      out.push_back({ServerFeature::kNodeAllocatableResources, path + ".nodeAllocatableResources"});
    }
    if (const Value* caps = Member(d, "capacity"); caps != nullptr && caps->IsObject()) {
      const Value* rcaps = Member(r, "capacity");
      for (const auto& c : caps->GetObject()) {
        const Value* rc = rcaps == nullptr ? nullptr : Member(*rcaps, c.name.GetString());
        if (missing(c.value, rc == nullptr ? kEmpty : *rc, "requestPolicy")) {
          out.push_back({ServerFeature::kConsumableCapacity,
                         path + ".capacity[" + c.name.GetString() + "].requestPolicy"});
        }
      }
    }
    if (const Value* attrs = Member(d, "attributes"); attrs != nullptr && attrs->IsObject()) {
      const Value* rattrs = Member(r, "attributes");
      for (const auto& a : attrs->GetObject()) {
        const Value* ra = rattrs == nullptr ? nullptr : Member(*rattrs, a.name.GetString());
        for (const char* list : {"ints", "bools", "strings", "versions"}) {
          if (missing(a.value, ra == nullptr ? kEmpty : *ra, list)) {
            out.push_back({ServerFeature::kListTypeAttributes,
                           path + ".attributes[" + a.name.GetString() + "]." + list});
          }
        }
      }
    }
  }
  return out;
}

std::vector<std::string> DescribeShape(const DeviceCatalog& catalog, const SliceShape& shape,
                                       const kube::ServerFeatures& features) {
  std::vector<std::string> notes;
  std::vector<std::string> grouped, single_root, multi_root;
  for (const CatalogDevice& d : catalog.devices) {
    if (d.capacity_policy || d.allow_multiple_allocations) grouped.push_back(d.name);
    auto root = d.attributes.find(kPcieRoot);
    if (root == d.attributes.end()) continue;
    const auto* list = std::get_if<std::vector<std::string>>(&root->second);
    if (list == nullptr) continue;
    (list->size() == 1 ? single_root : multi_root)
        .push_back(d.name +
                   (list->size() == 1 ? "" : " (" + std::to_string(list->size()) + " PCIe roots)"));
  }
  if (!shape.consumable_capacity && !grouped.empty()) {
    notes.push_back(
        "requestPolicy and allowMultipleAllocations left out of " + Names(grouped) + ": " +
        Why(features, ServerFeature::kConsumableCapacity) +
        "; the scheduler allocates each grouped device whole to one claim, and Prepare grants "
        "every CPU the device publishes");
  }
  if (!shape.list_attributes && !multi_root.empty()) {
    notes.push_back(std::string(kPcieRoot) + " left out of " + Names(multi_root) +
                    ": a list value needs DRAListTypeAttributes, and " +
                    Why(features, ServerFeature::kListTypeAttributes));
  }
  if (!shape.list_attributes && !single_root.empty()) {
    notes.push_back(std::string(kPcieRoot) + " published as a single string on " +
                    Names(single_root) + " (one PCIe root each; list values need " +
                    "DRAListTypeAttributes)");
  }
  if (!shape.node_allocatable && catalog.options.publish_node_allocatable_mapping) {
    notes.push_back("nodeAllocatableResources (publishNodeAllocatableResourceMapping) left out: " +
                    Why(features, ServerFeature::kNodeAllocatableResources));
  }
  return notes;
}

}  // namespace dracpu::dra
