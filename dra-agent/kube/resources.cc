#include "dra-agent/kube/resources.h"

#include <cctype>
#include <cstdio>

namespace dracpu::kube {

std::string ResourceSlicePath(std::string_view name) {
  return std::string(kResourceSlicesPath) + "/" + UrlEncode(name);
}

std::string ResourceClaimPath(std::string_view namespace_name, std::string_view name) {
  return "/apis/resource.k8s.io/v1/namespaces/" + UrlEncode(namespace_name) + "/resourceclaims/" +
         UrlEncode(name);
}

std::string NodePath(std::string_view name) { return "/api/v1/nodes/" + UrlEncode(name); }

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", u);
      out += buf;
    }
  }
  return out;
}

std::vector<ApiCall> ApiCallsUsed() {
  return {
      {"", "", "get", std::string(kVersionPath)},
      {"", "nodes", "get", ""},
      {"resource.k8s.io", "resourceslices", "get", ""},
      {"resource.k8s.io", "resourceslices", "list", ""},
      {"resource.k8s.io", "resourceslices", "watch", ""},
      {"resource.k8s.io", "resourceslices", "create", ""},
      {"resource.k8s.io", "resourceslices", "update", ""},
      {"resource.k8s.io", "resourceslices", "delete", ""},
      {"resource.k8s.io", "resourceclaims", "get", ""},
      {"resource.k8s.io", "resourceclaims/status", "update", ""},
  };
}

ApiCall ApiCallFor(std::string_view method, std::string_view path_and_query) {
  const size_t q = path_and_query.find('?');
  const std::string_view path = path_and_query.substr(0, q);
  const std::string_view query =
      q == std::string_view::npos ? std::string_view() : path_and_query.substr(q + 1);
  std::vector<std::string_view> parts;
  for (size_t start = 1; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  ApiCall call;
  size_t rest = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    rest = 2;  // /api/v1/...
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    call.api_group = std::string(parts[1]);
    rest = 3;  // /apis/<group>/<version>/...
  } else {
    call.non_resource_path = std::string(path);
    call.verb = method == "GET" ? "get" : "";
    return call;
  }
  if (parts.size() >= rest + 2 && parts[rest] == "namespaces" && parts.size() != rest + 2) {
    rest += 2;  // namespaced resource
  }
  if (parts.size() <= rest) {
    call.non_resource_path = std::string(path);
    return call;
  }
  call.resource = std::string(parts[rest]);
  const bool has_name = parts.size() > rest + 1;
  if (parts.size() > rest + 2) call.resource += "/" + std::string(parts[rest + 2]);
  const bool watch = query.find("watch=true") != std::string_view::npos ||
                     query.find("watch=1") != std::string_view::npos;
  if (method == "GET") {
    call.verb = watch ? "watch" : (has_name ? "get" : "list");
  } else if (method == "POST") {
    call.verb = "create";
  } else if (method == "PUT") {
    call.verb = "update";
  } else if (method == "PATCH") {
    call.verb = "patch";
  } else if (method == "DELETE") {
    call.verb = has_name ? "delete" : "deletecollection";
  }
  return call;
}

}  // namespace dracpu::kube
