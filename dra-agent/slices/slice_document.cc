#include "dra-agent/slices/slice_document.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>

namespace dracpu::dra {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

// Whether `v` is rendered at all in `shape`: a list needs list attributes, or exactly one item
// (then published as a plain string, the upstream standard form of pcieRoot).
bool Rendered(const AttributeValue& v, const SliceShape& shape) {
  const auto* l = std::get_if<std::vector<std::string>>(&v);
  return l == nullptr || shape.list_attributes || l->size() == 1;
}

void Attribute(Writer& w, const AttributeValue& v, const SliceShape& shape) {
  w.StartObject();
  if (const auto* i = std::get_if<int64_t>(&v)) {
    w.Key("int");
    w.Int64(*i);
  } else if (const auto* b = std::get_if<bool>(&v)) {
    w.Key("bool");
    w.Bool(*b);
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    w.Key("string");
    Str(w, *s);
  } else if (const auto* l = std::get_if<std::vector<std::string>>(&v);
             l != nullptr && !shape.list_attributes) {
    w.Key("string");
    Str(w, l->front());
  } else if (l != nullptr) {
    w.Key("strings");
    w.StartArray();
    for (const std::string& e : *l) Str(w, e);
    w.EndArray();
  }
  w.EndObject();
}

void Device(Writer& w, const CatalogDevice& d, const PoolInfo& pool) {
  w.StartObject();
  w.Key("name");
  Str(w, d.name);
  w.Key("attributes");
  w.StartObject();
  const SliceShape& shape = pool.shape;
  for (const auto& [key, value] : d.attributes) {
    if (!Rendered(value, shape)) continue;
    w.Key(key.c_str());
    Attribute(w, value, shape);
  }
  w.EndObject();
  if (d.cpu_capacity) {
    w.Key("capacity");
    w.StartObject();
    w.Key(kCpuCapacityName);
    w.StartObject();
    w.Key("value");
    Str(w, std::to_string(*d.cpu_capacity));
    if (d.capacity_policy && shape.consumable_capacity) {
      const CapacityPolicy& p = *d.capacity_policy;
      w.Key("requestPolicy");
      w.StartObject();
      w.Key("default");
      Str(w, std::to_string(p.default_value));
      w.Key("validRange");
      w.StartObject();
      w.Key("min");
      Str(w, std::to_string(p.min));
      w.Key("max");
      Str(w, std::to_string(p.max));
      if (p.step) {
        w.Key("step");
        Str(w, std::to_string(*p.step));
      }
      w.EndObject();
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
  }
  if (d.allow_multiple_allocations && shape.consumable_capacity) {
    w.Key("allowMultipleAllocations");
    w.Bool(true);
  }
  if (pool.publish_node_allocatable_mapping && shape.node_allocatable) {
    w.Key("nodeAllocatableResources");
    w.StartObject();
    w.Key("cpu");
    w.StartObject();
    w.Key("mapping");
    w.StartObject();
    if (d.cpu_capacity) {
      w.Key("capacityKey");
      Str(w, kCpuCapacityName);
      w.Key("capacityMultiplier");
      Str(w, "1");
    } else {
      w.Key("deviceMultiplier");
      Str(w, "1");
    }
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
}

void Devices(Writer& w, const std::vector<const CatalogDevice*>& devices, const PoolInfo& pool) {
  w.StartArray();
  for (const CatalogDevice* d : devices) Device(w, *d, pool);
  w.EndArray();
}

}  // namespace

std::string RenderAttributeJson(const AttributeValue& value) {
  rapidjson::StringBuffer b;
  Writer w(b);
  Attribute(w, value, SliceShape{});  // the full form: the metadata file is not an API object
  return std::string(b.GetString(), b.GetSize());
}

std::vector<std::vector<const CatalogDevice*>> ChunkDevices(const DeviceCatalog& catalog,
                                                            const SliceShape& shape) {
  bool lists = false;
  for (const CatalogDevice& d : catalog.devices) lists = lists || d.uses_list_attributes;
  lists = lists && shape.list_attributes;
  const size_t per_slice = lists ? kMaxDevicesPerSliceWithLists : kMaxDevicesPerSlice;
  std::vector<std::vector<const CatalogDevice*>> chunks(1);
  for (const CatalogDevice& d : catalog.devices) {
    if (chunks.back().size() == per_slice) chunks.emplace_back();
    chunks.back().push_back(&d);
  }
  return chunks;
}

std::string SliceGenerateName(int index, const std::string& node_name) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%05x", index);
  return std::string(prefix) + "-dra.cpu-" + node_name + "-";
}

std::string RenderDevicesJson(const std::vector<const CatalogDevice*>& devices,
                              const PoolInfo& pool) {
  rapidjson::StringBuffer b;
  Writer w(b);
  Devices(w, devices, pool);
  return std::string(b.GetString(), b.GetSize());
}

std::string RenderResourceSlice(const std::vector<const CatalogDevice*>& devices, int slice_count,
                                int index, const PoolInfo& pool, const std::string& name,
                                const std::string& resource_version) {
  rapidjson::StringBuffer b;
  Writer w(b);
  w.StartObject();
  w.Key("apiVersion");
  w.String("resource.k8s.io/v1");
  w.Key("kind");
  w.String("ResourceSlice");
  w.Key("metadata");
  w.StartObject();
  if (name.empty()) {
    w.Key("generateName");
    Str(w, SliceGenerateName(index, pool.node_name));
  } else {
    w.Key("name");
    Str(w, name);
    if (!resource_version.empty()) {
      w.Key("resourceVersion");
      Str(w, resource_version);
    }
  }
  if (!pool.node_uid.empty()) {
    w.Key("ownerReferences");
    w.StartArray();
    w.StartObject();
    w.Key("apiVersion");
    w.String("v1");
    w.Key("kind");
    w.String("Node");
    w.Key("name");
    Str(w, pool.node_name);
    w.Key("uid");
    Str(w, pool.node_uid);
    w.Key("controller");
    w.Bool(true);
    w.EndObject();
    w.EndArray();
  }
  w.EndObject();
  w.Key("spec");
  w.StartObject();
  w.Key("driver");
  w.String("dra.cpu");
  w.Key("pool");
  w.StartObject();
  w.Key("name");
  Str(w, pool.node_name);
  w.Key("generation");
  w.Int64(pool.generation);
  w.Key("resourceSliceCount");
  w.Int64(slice_count);
  w.EndObject();
  w.Key("nodeName");
  Str(w, pool.node_name);
  w.Key("devices");
  Devices(w, devices, pool);
  w.EndObject();
  w.EndObject();
  return std::string(b.GetString(), b.GetSize());
}

}  // namespace dracpu::dra
