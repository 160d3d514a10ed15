// Self-signed certificates for HTTPS tests, made with the OpenSSL API at test time (nothing is
// checked in): an EC P-256 key and an X.509 certificate valid for 127.0.0.1 and localhost that is
// also its own CA, so a client can trust it with certificate-authority(-data).
#pragma once

#include <string>

#include "common/status.h"

namespace dracpu::sim {

struct CertPair {
  std::string cert_pem;
  std::string key_pem;
};

Result<CertPair> GenerateSelfSignedCert(const std::string& common_name);

// Writes `pair` to <dir>/<stem>.crt and <dir>/<stem>.key.
Status WriteCertFiles(const CertPair& pair, const std::string& dir, const std::string& stem);

}  // namespace dracpu::sim
