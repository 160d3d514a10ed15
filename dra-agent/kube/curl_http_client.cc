#include "dra-agent/kube/curl_http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <stop_token>
#include <vector>

namespace dracpu::kube {
namespace {

// Handles kept for reuse; more may exist while many requests run at once.
constexpr size_t kMaxPooledHandles = 4;

// libcurl's integer options and CURLINFO_RESPONSE_CODE are C `long` by its API.
using CurlLong = long;  // NOLINT(google-runtime-int)

struct Transfer {
  const HttpRequest* request = nullptr;
  CURL* handle = nullptr;
  HttpResponse* response = nullptr;
  bool stopped_by_callback = false;
  bool too_large = false;
};

size_t WriteCallback(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  CurlLong code = 0;
  curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &code);
  if (t->request->on_body_chunk && code >= 200 && code < 300) {
    if (!t->request->on_body_chunk(std::string_view(data, n))) {
      t->stopped_by_callback = true;
      return 0;  // makes libcurl abort the transfer with CURLE_WRITE_ERROR
    }
    return n;
  }
  const size_t limit = t->request->max_body_bytes;
  if (limit > 0 && t->response->body.size() + n > limit) {
    t->too_large = true;
    return 0;  // CURLE_WRITE_ERROR: the rest is never read
  }
  t->response->body.append(data, n);
  return n;
}

size_t HeaderCallback(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size()) {
    std::string lower(line.substr(0, kRetryAfter.size()));
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower == kRetryAfter) {
      std::string_view v = line.substr(kRetryAfter.size());
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
      t->response->retry_after = std::string(v);
    }
  }
  return n;
}

// Runs `h` on a multi handle of its own, so that the wait for data (a watch stream can be idle
// for minutes) blocks in curl_multi_poll with no periodic wakeup, and a stop request wakes it at
// once (curl_multi_wakeup). A stop ends the transfer as CURLE_ABORTED_BY_CALLBACK (kCancelled).
// The connection is not reused afterwards: it lives in that multi handle's cache.
CURLcode PerformCancellable(CURL* h, const std::stop_token& cancel) {
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) return CURLE_OUT_OF_MEMORY;
  CURLcode result = CURLE_OK;
  if (curl_multi_add_handle(multi, h) != CURLM_OK) {
    curl_multi_cleanup(multi);
    return CURLE_FAILED_INIT;
  }
  {
    std::stop_callback wake(cancel, [multi] { curl_multi_wakeup(multi); });
    bool done = false;
    while (!done) {
      int running = 0;
      if (curl_multi_perform(multi, &running) != CURLM_OK) {
        result = CURLE_FAILED_INIT;
        break;
      }
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
        if (msg->msg == CURLMSG_DONE) {
          result = msg->data.result;
          done = true;
        }
      }
      if (done || running == 0) break;
      if (cancel.stop_requested()) {
        result = CURLE_ABORTED_BY_CALLBACK;
        break;
      }
      // libcurl shortens the wait to its own next timer (timeouts, keepalive); otherwise the
      // thread sleeps until data arrives or the stop request wakes it.
      constexpr int kLongWaitMs = 3600 * 1000;
      if (curl_multi_poll(multi, nullptr, 0, kLongWaitMs, nullptr) != CURLM_OK) {
        result = CURLE_FAILED_INIT;
        break;
      }
    }
  }
  curl_multi_remove_handle(multi, h);
  curl_multi_cleanup(multi);
  return result;
}

TransportError Classify(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return TransportError::kConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportError::kTimeout;
    case CURLE_ABORTED_BY_CALLBACK:
      return TransportError::kCancelled;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
      return TransportError::kTls;
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_WRITE_ERROR:
      return TransportError::kIo;
    default:
      return TransportError::kOther;
  }
}

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(TlsOptions tls) : tls_(std::move(tls)) {}
  ~CurlHttpClient() override {
    for (CURL* h : pool_) curl_easy_cleanup(h);
  }

  HttpResponse Send(const HttpRequest& request) override {
    CURL* h = Acquire();
    HttpResponse response;
    if (h == nullptr) {
      response.transport_error = TransportError::kOther;
      response.error_message = "curl_easy_init failed";
      return response;
    }
    Transfer t{&request, h, &response, false, false};
    char error_buffer[CURL_ERROR_SIZE] = {0};
    curl_slist* headers = nullptr;
    for (const auto& [k, v] : request.headers) {
      headers = curl_slist_append(headers, (k + ": " + v).c_str());
    }
    // libcurl would otherwise send "Expect: 100-continue" for larger bodies and wait.
    headers = curl_slist_append(headers, "Expect:");

    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (request.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteCallback);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &HeaderCallback);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<CurlLong>(request.timeout.count()));
    const CurlLong connect_ms =
        request.timeout.count() > 0 ? std::min<CurlLong>(request.timeout.count(), 10000) : 10000;
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    if (request.fresh_connection) curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "dracpu-dra-agent");
    ApplyTls(h);

    const CURLcode rc = request.cancel.stop_possible() ? PerformCancellable(h, request.cancel)
                                                       : curl_easy_perform(h);
    CurlLong code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.stopped_by_callback)) {
      response.status = static_cast<int>(code);
    } else if (rc == CURLE_WRITE_ERROR && t.too_large) {
      response.transport_error = TransportError::kBodyTooLarge;
      response.error_message = "the response body is larger than " +
                               std::to_string(request.max_body_bytes) + " bytes; not read further";
      response.status = static_cast<int>(code);
      response.body.clear();
    } else {
      response.transport_error = Classify(rc);
      response.error_message = std::string(curl_easy_strerror(rc));
      if (error_buffer[0] != '\0') response.error_message += std::string(": ") + error_buffer;
      // A stream that ended with an error after a 2xx header still tells the caller the status.
      response.status = static_cast<int>(code);
    }
    // A cancelled or failed transfer leaves the connection in an unknown state: drop the handle
    // rather than pool it.
    Release(h, response.transport_error == TransportError::kNone);
    return response;
  }

 private:
  void ApplyTls(CURL* h) {
    if (tls_.insecure_skip_verify) {
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    // CURL_BLOB_COPY: libcurl copies the bytes; the const_casts only satisfy its C struct.
    if (!tls_.ca_pem.empty()) {
      curl_blob blob{const_cast<char*>(tls_.ca_pem.data()), tls_.ca_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (!tls_.client_cert_pem.empty()) {
      curl_blob cert{const_cast<char*>(tls_.client_cert_pem.data()), tls_.client_cert_pem.size(),
                     CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(tls_.client_key_pem.data()), tls_.client_key_pem.size(),
                    CURL_BLOB_COPY};
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
      curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
    }
  }

  CURL* Acquire() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!pool_.empty()) {
        CURL* h = pool_.back();
        pool_.pop_back();
        // Keeps the connection cache; clears the previous request's options.
        curl_easy_reset(h);
        return h;
      }
    }
    return curl_easy_init();
  }

  void Release(CURL* h, bool reusable) {
    if (reusable) {
      std::lock_guard<std::mutex> lock(mu_);
      if (pool_.size() < kMaxPooledHandles) {
        pool_.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }

  const TlsOptions tls_;
  std::mutex mu_;
  std::vector<CURL*> pool_;
};

}  // namespace

Result<std::unique_ptr<HttpClient>> NewCurlHttpClient(const TlsOptions& tls) {
  if (tls.client_cert_pem.empty() != tls.client_key_pem.empty()) {
    return InvalidArgumentError(
        "TLS client authentication needs both a certificate and a key; only one was given");
  }
  static std::once_flag once;
  static CURLcode init_rc = CURLE_OK;
  std::call_once(once, [] { init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init_rc != CURLE_OK) {
    return InternalError(std::string("curl_global_init: ") + curl_easy_strerror(init_rc));
  }
  return std::unique_ptr<HttpClient>(std::make_unique<CurlHttpClient>(tls));
}

}  // namespace dracpu::kube
