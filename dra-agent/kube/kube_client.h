// KubeClient: the Kubernetes REST client of the dra-agent.
//
//   auto http = NewCurlHttpClient(config.tls);
//   auto client = KubeClient::Create(config, *std::move(http), fs, clock, random);
//   auto list = client->List(kResourceSlicesPath, {.field_selector =
//   "spec.nodeName=n1,spec.driver=dra.cpu"}); client->Watch(kResourceSlicesPath, {.field_selector =
//   ..., .resource_version = list->resource_version},
//                 [](const WatchEvent& e) { ...; return true; }, &stop);
//
// What it does for every call:
// - Authorization: a fixed bearer token, or a token file (service account, kubeconfig tokenFile)
//   re-read every `token_refresh_interval` and once more right away when the server answers 401.
// - Retries with capped exponential backoff and jitter (BackoffPolicy, injected Clock/Random) on
//   429, 5xx and connection failures, up to `max_attempts` in all. Requests that may have reached
//   the server (connection dropped mid-exchange, timeout) are retried only for idempotent verbs
//   (GET, PUT with resourceVersion, DELETE); POST is retried only when the connection could not be
//   made or the server answered 429/5xx. A Retry-After header lengthens the delay (never beyond
//   the policy's max).
// - Per-request timeout (`request_timeout`); watches last `timeout_seconds` plus a margin, so a
//   server that never ends a stream is cut off.
// - Size limits: a body over `max_object_bytes` (`max_list_bytes` for a List) or a watch event
//   over `max_object_bytes` ends the request with RESOURCE_EXHAUSTED, unread; a watch stream
//   that is not a sequence of JSON objects is DATA_LOSS. JSON is parsed by the rules of
//   common/untrusted_json.h (depth, valid UTF-8).
// - Errors as Status, see api_error.h (IsConflict, IsGone, ...).
// Nothing throws. Thread safety: all methods are safe to call concurrently; a Watch blocks its
// caller for the stream's lifetime and uses its own connection.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/cluster_config.h"
#include "dra-agent/kube/http_client.h"
#include "dra-agent/kube/json_object.h"

namespace dracpu::kube {

struct ClientOptions {
  std::chrono::milliseconds request_timeout{30000};
  int max_attempts = 6;
  BackoffPolicy backoff{std::chrono::milliseconds(250), std::chrono::milliseconds(30000), 2.0, 0.5};
  std::chrono::seconds token_refresh_interval{60};
  // Sends fieldValidation=Strict on create and update: the server refuses objects with fields it
  // does not know (a typo, or a field of a newer API version) instead of silently dropping them.
  bool strict_field_validation = false;
  // The API server stores at most 1.5 MiB per object (etcd) and takes request bodies up to
  // 3 MiB; an answer about one object (or one watch event) that is larger is not one. A List of
  // this node's slices holds at most a few MiB (docs/security.md).
  size_t max_object_bytes = 8u << 20;
  size_t max_list_bytes = 64u << 20;
  // How long after the server should have ended a watch (timeoutSeconds) the client gives up.
  std::chrono::milliseconds watch_timeout_margin{30000};
};

struct ListOptions {
  std::string field_selector;  // "spec.nodeName=n1,spec.driver=dra.cpu" (encoded by the client)
  std::string label_selector;
  std::string resource_version;  // "" = most recent (a consistent read)
};

struct ObjectList {
  std::vector<JsonObject> items;
  std::string resource_version;  // of the list; start a watch here
};

// Delete preconditions; empty fields are not sent. A mismatch is a 409 Conflict (ABORTED).
struct DeleteOptions {
  std::string uid;
  std::string resource_version;
};

struct WatchOptions {
  std::string field_selector;
  std::string label_selector;
  std::string resource_version;  // start after this version; "" = the current state as ADDED
  int timeout_seconds = 300;     // the server ends the stream then; 0 = no limit (needs cancel)
  bool allow_bookmarks = true;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  JsonObject object;  // for kBookmark only metadata.resourceVersion is meaningful
};

class KubeClient {
 public:
  // `fs` reads the token file; `fs`, `clock` and `random` must outlive the client.
  static Result<std::unique_ptr<KubeClient>> Create(const ClusterConfig& config,
                                                    std::unique_ptr<HttpClient> http,
                                                    const FileSystem& fs, Clock& clock,
                                                    Random& random, ClientOptions options = {});

  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  const std::string& server() const { return config_.server; }

  // GET <path> (an object, or /version).
  Result<JsonObject> Get(std::string_view path);
  // GET <path>, with Get's retries and errors; the body of the 2xx answer as it came, not
  // parsed. For a caller that parses the object into a view of its own (Prepare, its
  // ResourceClaims): parsing it here too, and writing it out again, cost every claim twice.
  Result<std::string> GetBody(std::string_view path);
  // GET <collection>?fieldSelector=...&labelSelector=...&resourceVersion=...
  Result<ObjectList> List(std::string_view collection, const ListOptions& options = {});
  // POST <collection>; `object` may use metadata.generateName. Returns the created object (with
  // `dry_run`, dryRun=All: what the server would have stored; nothing is). On failure
  // `*error_details`, when given, gets the refusal's code, reason and causes (api_error.h).
  Result<JsonObject> Create(std::string_view collection, const JsonObject& object,
                            ApiErrorDetails* error_details = nullptr, bool dry_run = false);
  // PUT <path>; `object` must carry metadata.resourceVersion (else the server may refuse it).
  // A stale version is ABORTED (409 Conflict). `error_details` as for Create.
  Result<JsonObject> Update(std::string_view path, const JsonObject& object,
                            ApiErrorDetails* error_details = nullptr);
  // DELETE <path> with optional preconditions. NOT_FOUND when already gone (callers that only
  // want it gone treat that as success).
  Status Delete(std::string_view path, const DeleteOptions& options = {});

  // Read-modify-write: GET, `mutate` (which may return an error to give up), PUT; on a 409
  // Conflict starts over, at most `max_attempts` times. Returns the updated object. The PUT goes
  // to `put_path` when given (a subresource: GET the object, PUT <path>/status).
  Result<JsonObject> UpdateWithRetry(std::string_view path,
                                     const std::function<Status(JsonObject&)>& mutate,
                                     int max_attempts = 5, std::string_view put_path = {});

  // One watch request: calls `on_event` for each event until the server ends the stream
  // (OK), `on_event` returns false (OK), a stop is requested on `cancel` (CANCELLED, at once:
  // the wait for the next event blocks in the kernel and the request wakes it), or an error:
  // a 410 response or ERROR event with code 410 is OUT_OF_RANGE (IsGone: re-list), other failures
  // as in api_error.h. No retries: reconnecting is the caller's loop (see Informer).
  Status Watch(std::string_view collection, const WatchOptions& options,
               const std::function<bool(const WatchEvent&)>& on_event, std::stop_token cancel = {});

 private:
  KubeClient(ClusterConfig config, std::unique_ptr<HttpClient> http, const FileSystem& fs,
             Clock& clock, Random& random, ClientOptions options);

  struct Call {
    std::string method;
    std::string path;  // with query
    std::string body;
    bool idempotent = true;
    int max_attempts = 0;  // 0 = options_.max_attempts
    // nullopt = options_.request_timeout; zero = no limit (cancellable streams only)
    std::optional<std::chrono::milliseconds> timeout;
    std::function<bool(std::string_view)> on_body_chunk;
    std::stop_token cancel;
    ApiErrorDetails* error_details = nullptr;  // filled from the last failed attempt
    size_t max_body_bytes = 0;                 // 0 = options_.max_object_bytes
  };
  static Call MakeCall(std::string_view method, std::string_view path, std::string body = "");
  // Sends with auth, retries and backoff; a 2xx response, or the error.
  Result<HttpResponse> Do(const Call& call);
  std::string Token(bool force_reread);

  const ClusterConfig config_;
  std::unique_ptr<HttpClient> http_;
  const FileSystem& fs_;
  Clock& clock_;
  Random& random_;
  const ClientOptions options_;

  std::mutex token_mu_;
  std::string token_;                 // guarded by token_mu_
  bool token_read_ = false;           // guarded by token_mu_
  Clock::TimePoint token_read_at_{};  // guarded by token_mu_
};

// Splits a byte stream into top-level JSON objects or arrays (a watch body), without relying on
// newlines. Holds at most one value's bytes (plus the last chunk appended).
class JsonStreamSplitter {
 public:
  explicit JsonStreamSplitter(size_t max_value_bytes = 8u << 20)
      : max_value_bytes_(max_value_bytes) {}
  void Append(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }
  // True with the next complete top-level value's text in `*value`, false when more bytes are
  // needed. DATA_LOSS when a value does not start with '{' or '[' (the stream is not JSON
  // values), RESOURCE_EXHAUSTED when one passes max_value_bytes; the splitter is then useless.
  Result<bool> Next(std::string* value);

 private:
  const size_t max_value_bytes_;
  std::string buffer_;
  size_t scanned_ = 0;  // bytes of buffer_ already scanned for the current value
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool started_ = false;
};

}  // namespace dracpu::kube
