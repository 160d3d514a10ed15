// The first two steps the kube-apiserver takes with a ResourceSlice body, before validation
// (../shared/spec/resourceslice-validation.md "How an answer is built"):
//  1. Decode into the resource.k8s.io/v1 Go types of that Kubernetes version: a JSON type that
//     does not fit a field, or a quantity that does not parse, is a 400 BadRequest; a field the
//     version does not have is dropped (Warning 299), or refused under fieldValidation=Strict.
//     Quantities given as JSON numbers are accepted (as upstream) and stored as strings.
//  2. Drop the fields of disabled feature gates, silently, unless the stored object (on update)
//     already uses that feature.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "tests/sim/apiserver/feature_gates.h"

namespace dracpu::sim {

struct DecodeResult {
  // Non-empty: the 400 message ("ResourceSlice in version \"v1\" cannot be handled as a
  // ResourceSlice: json: cannot unmarshal string into Go struct field ...").
  std::string error;
  // Paths of the unknown fields that were removed ("spec.devices[0].atributes").
  std::vector<std::string> unknown_fields;
};

// Step 1 on `slice` (a JSON object), in place.
DecodeResult DecodeResourceSlice(rapidjson::Value& slice,
                                 rapidjson::Document::AllocatorType& allocator,
                                 const FeatureGates& gates);

// Step 2, in place; `old_slice` is the stored object on update, nullptr on create. Returns the
// paths of what was removed ("spec.devices[0].capacity[dra.cpu/cpu].requestPolicy").
std::vector<std::string> DropDisabledFields(rapidjson::Value& slice,
                                            const rapidjson::Value* old_slice,
                                            const FeatureGates& gates);

}  // namespace dracpu::sim
