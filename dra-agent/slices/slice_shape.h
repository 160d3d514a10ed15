// SliceShape: which optional parts of a DeviceCatalog a ResourceSlice carries, chosen from what
// the API server keeps (slice_features.h). The renderer (slice_document.h) applies it.
#pragma once

namespace dracpu::dra {

// Which optional parts of the catalog are rendered.
struct SliceShape {
  // requestPolicy on dra.cpu/cpu and allowMultipleAllocations (grouped devices). Without them
  // the scheduler hands each grouped device out whole, with no consumedCapacity.
  bool consumable_capacity = true;
  // List-typed attribute values (pcieRoot as `strings`). Without them a device with exactly one
  // PCIe root publishes it as a `string` (the upstream standard form) and one with several
  // publishes none.
  bool list_attributes = true;
  // nodeAllocatableResources (KEP-5517), when the config asks for it.
  bool node_allocatable = true;
};

}  // namespace dracpu::dra
