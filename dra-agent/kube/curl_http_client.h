// CurlHttpClient: HttpClient over libcurl. Keeps a small pool of easy handles so connections
// (and TLS sessions) are reused across requests; a watch holds its own handle for its lifetime,
// so it never blocks other requests. TLS material is passed in memory (PEM blobs), never
// written to disk.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "dra-agent/kube/http_client.h"

namespace dracpu::kube {

struct TlsOptions {
  std::string ca_pem;  // empty: the system trust store
  bool insecure_skip_verify = false;
  std::string client_cert_pem;  // both or neither
  std::string client_key_pem;
};

// INVALID_ARGUMENT when only one of the client certificate and key is given.
Result<std::unique_ptr<HttpClient>> NewCurlHttpClient(const TlsOptions& tls);

}  // namespace dracpu::kube
