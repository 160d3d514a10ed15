// Slices that follow the cluster: which optional ResourceSlice fields the API server keeps, and
// the shape dracpu publishes so that it never sends a field the server drops.
//
// How the agent learns it (docs/resourceslices.md, "Shapes that follow the cluster"):
//  1. Before the first write that needs a feature, and again every resync (so a gate turned on
//     or off later is noticed), one dry-run create (dryRun=All: the server runs decoding, its
//     dropping of disabled-gate fields and validation, and stores nothing) of a one-device probe
//     slice per feature: requestPolicy + allowMultipleAllocations (DRAConsumableCapacity), a
//     `strings` pcieRoot (DRAListTypeAttributes), nodeAllocatableResources
//     (DRANodeAllocatableResources). What comes back says kept or dropped. The server's version
//     alone cannot tell: gates are set per cluster.
//  2. Every real write's answer is compared with what was sent (FindDroppedFields): a field
//     missing from the answer means the server dropped it after all (reconfigured since the
//     probe); the finding is recorded and the slices are republished without it.
// A feature that is not known to be kept is not used (ShapeFor).
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "dra-agent/devices/device_catalog.h"
#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/server_features.h"
#include "dra-agent/slices/slice_shape.h"

namespace dracpu::dra {

// The shape for what `features` knows: only kept features are used.
SliceShape ShapeFor(const kube::ServerFeatures& features);

// The features the catalog's full shape uses (grouped devices: consumable capacity; pcieRoot
// lists: list attributes; the node-allocatable mapping).
std::vector<kube::ServerFeature> FeaturesNeeded(const DeviceCatalog& catalog);

// Probes each of `which` with a dry-run create for `node` and records the findings. A transport
// error, or a refusal that is not the feature's own (403, a webhook, a bad node name), is
// returned and leaves the feature as it was; `*error_details` then describes the refusal.
Status ProbeSliceFeatures(kube::KubeClient& client, const std::string& node,
                          const std::vector<kube::ServerFeature>& which,
                          kube::ServerFeatures& features, kube::ApiErrorDetails* error_details);

// The gated fields of `sent` (a ResourceSlice) that `returned` (the server's answer) lacks.
struct DroppedField {
  kube::ServerFeature feature;
  std::string path;  // "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy"
};
std::vector<DroppedField> FindDroppedFields(const rapidjson::Value& sent,
                                            const rapidjson::Value& returned);

// One sentence per thing the shape leaves out of this catalog and why, for the log and
// gatherinfo ("resource.kubernetes.io/pcieRoot left out of cpudevnuma000 (4 PCIe roots): ...").
// Empty when the full shape is published.
std::vector<std::string> DescribeShape(const DeviceCatalog& catalog, const SliceShape& shape,
                                       const kube::ServerFeatures& features);

}  // namespace dracpu::dra
