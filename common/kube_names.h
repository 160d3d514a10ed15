// Kubernetes object names as the API server validates them (apimachinery's IsDNS1123Label and
// IsDNS1123Subdomain), so that a name the kubelet or a peer hands us is refused before it is
// used in a request path, shared memory or a message, instead of trusting that someone upstream
// checked it.
#pragma once

#include <string_view>

#include "common/status.h"

namespace dracpu {

// Namespaces: 1-63 characters of [a-z0-9-], starting and ending with a letter or digit.
// INVALID_ARGUMENT naming `what` and the (escaped) value otherwise.
Status ValidateDnsLabel(std::string_view value, std::string_view what);

// Most object names (ResourceClaims, Pods): 1-253 characters, DNS labels joined by '.'.
Status ValidateDnsSubdomain(std::string_view value, std::string_view what);

}  // namespace dracpu
