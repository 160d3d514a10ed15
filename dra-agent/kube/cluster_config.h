// Where the API server is and how to authenticate to it: from the pod's service account
// (in-cluster) or from a kubeconfig file. All files are read through the FileSystem seam, so
// tests use temp dirs.
//
// Errors are INVALID_ARGUMENT (bad content) or NOT_FOUND (missing file) with a message that names
// the file and the key ("kubeconfig /k: users[name=\"u\"].user.client-key-data: invalid base64 at
// offset 12"). Credential plugins (exec, auth-provider) and basic auth are refused with
// UNIMPLEMENTED.
#pragma once

#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"
#include "dra-agent/kube/curl_http_client.h"

namespace dracpu::kube {

struct ClusterConfig {
  std::string server;        // "https://host:port" or "http://..." (no trailing '/')
  std::string bearer_token;  // a fixed token; used when token_file is empty
  std::string token_file;    // FileSystem path of a token that rotates; re-read by the client
  TlsOptions tls;
  std::string source;  // for messages: "in-cluster", "kubeconfig /path (context c)"
};

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// The pod's service account: `host`/`port` are $KUBERNETES_SERVICE_HOST/_PORT (read by main; an
// IPv6 host is bracketed here). Reads <sa_dir>/ca.crt now and checks <sa_dir>/token is readable;
// the token itself is re-read by the client as it rotates. FAILED_PRECONDITION when host or port
// is empty (not running in a pod).
Result<ClusterConfig> InClusterConfig(const FileSystem& fs, std::string_view host,
                                      std::string_view port,
                                      std::string_view sa_dir = kServiceAccountDir);

// A kubeconfig file: `context` (or current-context when empty) picks the cluster and user.
// `path` is a FileSystem path (root-relative): main makes a relative --kubeconfig absolute.
// One file only: a $KUBECONFIG list of files is not merged.
// Refused with UNIMPLEMENTED: exec/auth-provider plugins, basic auth, impersonation (as*),
// proxy-url and tls-server-name.
// Relative file paths in it are relative to the kubeconfig's directory, as kubectl does.
// Supported: server (https or http), certificate-authority[-data], insecure-skip-tls-verify,
// token, tokenFile (wins over token, and is re-read), client-certificate[-data],
// client-key[-data].
Result<ClusterConfig> LoadKubeconfig(const FileSystem& fs, std::string_view path,
                                     std::string_view context = "");

// Standard base64 (RFC 4648, '=' padding, whitespace ignored); INVALID_ARGUMENT naming the offset.
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace dracpu::kube
