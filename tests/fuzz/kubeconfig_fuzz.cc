// Fuzz target kubeconfig: a kubeconfig file through LoadKubeconfig (yaml-cpp behind our
// adapter), with a CA, a client certificate and key and a token file beside it. Contracts: an
// accepted config names an http(s) server without a trailing '/', a client certificate only
// with its key, and where it came from; a refusal is INVALID_ARGUMENT, NOT_FOUND,
// RESOURCE_EXHAUSTED or UNIMPLEMENTED naming the kubeconfig; DecodeBase64 of what it accepted
// never grows the data.
#include "dra-agent/kube/cluster_config.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/memory_file_system.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  using fuzz::Check;
  const std::string_view input = fuzz::AsText(data, size);
  fuzz::MemoryFileSystem fs;
  fs.Put("/etc/kube/config", std::string(input));
  fs.Put("/etc/kube/ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  fs.Put("/etc/kube/client.crt", "client certificate");
  fs.Put("/etc/kube/client.key", "client key");
  fs.Put("/etc/kube/token", "token-from-file\n");
  Result<kube::ClusterConfig> config = kube::LoadKubeconfig(fs, "/etc/kube/config");
  if (!config.ok()) {
    const StatusCode code = config.status().code();
    Check(code == StatusCode::kInvalidArgument || code == StatusCode::kNotFound ||
              code == StatusCode::kResourceExhausted || code == StatusCode::kUnimplemented,
          "a refusal has an unexpected code", input);
    Check(config.status().message().find("kubeconfig /etc/kube/config") != std::string::npos,
          "a refusal does not name the kubeconfig", input);
  } else {
    const std::string& server = config->server;
    Check(server.rfind("https://", 0) == 0 || server.rfind("http://", 0) == 0,
          "the server is not http(s)", input);
    Check(server.back() != '/', "the server ends with '/'", input);
    Check(config->tls.client_cert_pem.empty() == config->tls.client_key_pem.empty(),
          "a client certificate without its key", input);
    Check(config->source.rfind("kubeconfig /etc/kube/config (context ", 0) == 0,
          "the source does not name the kubeconfig and context", input);
  }
  Result<std::string> decoded = kube::DecodeBase64(input);
  if (decoded.ok()) Check(decoded->size() * 4 <= input.size() * 3, "base64 decoding grew", input);
  return 0;
}
