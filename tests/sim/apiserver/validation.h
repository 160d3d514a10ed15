// The kube-apiserver's validation of resource.k8s.io/v1 ResourceSlices, as far as dracpu's
// slices can exercise it: names, limits and value rules of ResourceSliceSpec and Device
// (protocols.md §7.1, upstream pkg/apis/resource/validation). Written from the documented rules;
// the simulator refuses what a real server refuses, so publisher tests catch it here.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <vector>

namespace dracpu::sim {

struct FieldError {
  std::string field;   // "spec.devices[3].attributes[dra.cpu/x]"
  std::string type;    // upstream's wording: "Required value", "Invalid value", "Too many", ...
  std::string reason;  // StatusCause reason: FieldValueRequired, FieldValueInvalid, ...
  std::string detail;  // what upstream says after the type, value included when it has one
  std::string ToString() const;  // "<field>: <type>: <detail>"
};

// `old_slice` is the stored object on update (immutable fields), nullptr on create.
std::vector<FieldError> ValidateResourceSlice(const rapidjson::Value& slice,
                                              const rapidjson::Value* old_slice);

// Removes the fields a v1 ResourceSlice does not have (as the API server's decoder drops them)
// and returns their paths ("spec.devices[0].atributes"). With fieldValidation=Strict the server
// refuses such an object instead; by default it stores the rest and sends a Warning header.
// Maps with free-form keys (labels, attributes, capacity) and alpha-feature objects whose shape
// varies by version (nodeSelector, taints, counters, nodeAllocatableResources) are not inspected.
std::vector<std::string> PruneUnknownSliceFields(rapidjson::Value& slice,
                                                 rapidjson::Document::AllocatorType& allocator);

// Name rules shared with the server (metadata.name of slices: DNS subdomain).
bool IsDnsLabel(const std::string& s);      // RFC 1123 label, <= 63
bool IsDnsSubdomain(const std::string& s);  // RFC 1123 subdomain, <= 253
bool IsCIdentifier(const std::string& s);
bool IsQuantity(const std::string& s);  // Kubernetes resource.Quantity syntax
bool IsSemver(const std::string& s);

}  // namespace dracpu::sim
