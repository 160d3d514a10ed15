// The kube-apiserver's validation of resource.k8s.io/v1 ResourceSlices (upstream
// pkg/apis/resource/validation ValidateResourceSlice[Update] and the ObjectMeta rules it calls),
// rule by rule as ../shared/spec/resourceslice-validation.md lists them: the same checks in the
// same order, the same field paths (map-key errors on the map path, duplicates on the index
// path) and the same messages, so a 422 from the simulator reads like one from a real server.
//
// Runs on an object that has been through DecodeResourceSlice and DropDisabledFields
// (slice_decode.h): JSON types are right, quantities parse, and disabled-gate fields are gone.
// `gates` matters only where upstream asks a gate during validation (DRAFractionalCapacityRange).
//
// What is left out, and why (see also the note in docs/kube-client.md):
//  * CEL and other parts of validation.go that apply to claims, classes and taint rules;
//  * managedFields, deletionTimestamp and ownerReference "banned owner" rules (a driver never
//    writes those);
//  * the %#v text of Go structs in a few messages (addresses in upstream's output): we print the
//    type name with "{...}".
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "tests/sim/apiserver/feature_gates.h"
#include "tests/sim/apiserver/field_errors.h"

namespace dracpu::sim {

// `old_slice` is the stored object on update (immutable fields, ratcheting), nullptr on create.
std::vector<FieldError> ValidateResourceSlice(const rapidjson::Value& slice,
                                              const rapidjson::Value* old_slice,
                                              const FeatureGates& gates);

// apimachinery's name checks: an empty vector means valid, otherwise upstream's messages.
std::vector<std::string> IsDns1123Label(const std::string& s);      // <= 63
std::vector<std::string> IsDns1123Subdomain(const std::string& s);  // <= 253
std::vector<std::string> IsCIdentifier(const std::string& s);
std::vector<std::string> IsQualifiedName(const std::string& s);  // label keys
std::vector<std::string> IsValidLabelValue(const std::string& s);
bool IsSemver(const std::string& s);

}  // namespace dracpu::sim
