// HttpClient: the transport seam of the Kubernetes client. One request in, one response out; no
// retries, no Kubernetes meaning (that is KubeClient's job). CurlHttpClient is the real one.
//
// Thread safety: implementations are safe for concurrent use; each Send may block for up to the
// request's timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dracpu::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string url;  // absolute: scheme://host:port/path?query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The whole exchange, connect included; zero means no limit (only for cancellable streams).
  std::chrono::milliseconds timeout{30000};
  // When set and the response status is 2xx, body bytes are handed to this callback as they
  // arrive instead of being collected (watch streams); returning false ends the request, which
  // then reports success. Error bodies (non-2xx) are always collected into HttpResponse::body.
  std::function<bool(std::string_view)> on_body_chunk;
  // Send on a new connection rather than a pooled one. For non-idempotent requests: libcurl
  // silently resends a request once when a reused connection turns out to be dead, which for a
  // POST could create an object twice.
  bool fresh_connection = false;
  // When a stop is requested the request is abandoned at once with kCancelled. A request with a
  // token that can stop waits for its data without any periodic wakeup (watch streams).
  std::stop_token cancel;
  // Bytes of a collected body (a 2xx body without on_body_chunk, or any error body) beyond
  // which the request is abandoned with kBodyTooLarge; 0 = no limit. A hostile or broken server
  // cannot make the agent buffer without bound.
  size_t max_body_bytes = 0;
};

// What went wrong below HTTP. kConnect means the request never reached the server (safe to
// retry any verb); kIo means it may have (connection dropped mid-exchange).
// kBodyTooLarge: the body passed HttpRequest::max_body_bytes.
enum class TransportError {
  kNone,
  kConnect,
  kTimeout,
  kIo,
  kTls,
  kCancelled,
  kBodyTooLarge,
  kOther
};

struct HttpResponse {
  TransportError transport_error = TransportError::kNone;
  std::string error_message;  // set with transport_error
  int status = 0;             // HTTP status when transport_error == kNone
  std::string body;
  std::string retry_after;  // the Retry-After header, when present
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  virtual HttpResponse Send(const HttpRequest& request) = 0;
};

}  // namespace dracpu::kube
