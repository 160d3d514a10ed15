// ResourceSlice documents (resource.k8s.io/v1 JSON, protocols.md §7.1) for a DeviceCatalog, in
// the SliceShape the API server keeps (slice_shape.h): one pool named after the node, devices
// chunked 128 per slice (64 when list-typed attributes such as pcieRoot are published), slice
// names generated as "<index as 5 hex digits>-dra.cpu-<node>-"
// like the Go kubeletplugin helper (so index order = the scheduler's preference order), owner
// reference to the Node.
#pragma once

#include <string>
#include <vector>

#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/slices/slice_shape.h"

namespace dracpu::dra {

inline constexpr int kMaxDevicesPerSlice = 128;
inline constexpr int kMaxDevicesPerSliceWithLists = 64;

struct PoolInfo {
  std::string node_name;
  std::string node_uid;
  int64_t generation = 1;
  bool publish_node_allocatable_mapping = false;
  SliceShape shape = {};  // the optional fields the server keeps
};

// The catalog's devices split into slices, in order. Always at least one (possibly empty) slice,
// so consumers see that the pool exists.
std::vector<std::vector<const CatalogDevice*>> ChunkDevices(const DeviceCatalog& catalog,
                                                            const SliceShape& shape = {});

// One attribute value as the API writes it: {"int": 3}, {"bool": true}, {"string": "x"},
// {"strings": [...]} (also the KEP-5304 metadata files' format).
std::string RenderAttributeJson(const AttributeValue& value);

// "00000-dra.cpu-<node>-" for slice `index`.
std::string SliceGenerateName(int index, const std::string& node_name);

// The full ResourceSlice object for one chunk. `name` empty: uses generateName (create);
// otherwise `name` and `resource_version` (update).
std::string RenderResourceSlice(const std::vector<const CatalogDevice*>& devices, int slice_count,
                                int index, const PoolInfo& pool, const std::string& name,
                                const std::string& resource_version);

// Only the "devices" array of a chunk, canonical (keys in fixed order): publishers compare it
// with what the API server holds to decide whether a slice needs an update.
std::string RenderDevicesJson(const std::vector<const CatalogDevice*>& devices,
                              const PoolInfo& pool);

}  // namespace dracpu::dra
