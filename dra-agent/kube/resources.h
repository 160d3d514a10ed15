// REST paths of the resources dracpu uses, and the list of every call the client makes (for the
// RBAC check of the deploy tests: each ApiCall must be allowed by the ClusterRole).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dracpu::kube {

inline constexpr std::string_view kResourceSlicesPath = "/apis/resource.k8s.io/v1/resourceslices";
inline constexpr std::string_view kVersionPath = "/version";

std::string ResourceSlicePath(std::string_view name);
std::string ResourceClaimPath(std::string_view namespace_name, std::string_view name);
std::string NodePath(std::string_view name);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view text);

struct ApiCall {
  std::string api_group;          // "" core, "resource.k8s.io"; empty with non_resource_path
  std::string resource;           // "resourceslices"
  std::string verb;               // Kubernetes RBAC verb: get list watch create update delete
  std::string non_resource_path;  // "/version" for non-resource URLs
  friend bool operator==(const ApiCall&, const ApiCall&) = default;
};

// Every (group, resource, verb) dracpu's agents call through KubeClient.
std::vector<ApiCall> ApiCallsUsed();

// The RBAC call a request maps to ("GET" + "/apis/resource.k8s.io/v1/resourceslices?watch=true"
// -> resource.k8s.io resourceslices watch). For tests that compare what was sent with
// ApiCallsUsed(); unknown paths give an ApiCall with only non_resource_path set.
ApiCall ApiCallFor(std::string_view method, std::string_view path_and_query);

}  // namespace dracpu::kube
