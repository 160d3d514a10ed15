#include "dra-agent/kube/kube_client.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "common/log_escape.h"
#include "dra-agent/kube/api_error.h"
#include "dra-agent/kube/resources.h"

namespace dracpu::kube {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

void AddQuery(std::string* path, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  path->push_back(path->find('?') == std::string::npos ? '?' : '&');
  *path += std::string(key) + "=" + UrlEncode(value);
}

bool Retriable(const HttpResponse& r, bool idempotent) {
  switch (r.transport_error) {
    case TransportError::kNone:
      return r.status == 429 || r.status >= 500;
    case TransportError::kConnect:
      return true;
    case TransportError::kIo:
    case TransportError::kTimeout:
      return idempotent;
    default:
      return false;  // TLS and configuration problems do not heal by retrying
  }
}

}  // namespace

Result<bool> JsonStreamSplitter::Next(std::string* value) {
  for (; scanned_ < buffer_.size(); ++scanned_) {
    const char c = buffer_[scanned_];
    if (!started_) {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      if (c != '{' && c != '[') {
        return DataLossError("watch stream: a value starts with " +
                             LogQuote(std::string_view(&c, 1)) + ", not '{' or '['");
      }
      // Drop the separators so the value starts at buffer_[0].
      buffer_.erase(0, scanned_);
      scanned_ = 0;
      started_ = true;
    }
    if (scanned_ >= max_value_bytes_) {
      return ResourceExhaustedError("watch stream: an event is larger than " +
                                    std::to_string(max_value_bytes_) + " bytes");
    }
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        *value = buffer_.substr(0, scanned_ + 1);
        buffer_.erase(0, scanned_ + 1);
        scanned_ = 0;
        started_ = false;
        return true;
      }
    }
  }
  if (!started_) {  // only separators so far: keep nothing (a stream of blanks stays small)
    buffer_.clear();
    scanned_ = 0;
  }
  return false;
}

KubeClient::KubeClient(ClusterConfig config, std::unique_ptr<HttpClient> http, const FileSystem& fs,
                       Clock& clock, Random& random, ClientOptions options)
    : config_(std::move(config)),
      http_(std::move(http)),
      fs_(fs),
      clock_(clock),
      random_(random),
      options_(options) {}

Result<std::unique_ptr<KubeClient>> KubeClient::Create(const ClusterConfig& config,
                                                       std::unique_ptr<HttpClient> http,
                                                       const FileSystem& fs, Clock& clock,
                                                       Random& random, ClientOptions options) {
  if (config.server.empty()) return InvalidArgumentError("Kubernetes client: no server URL");
  if (http == nullptr) return InvalidArgumentError("Kubernetes client: no HTTP client");
  if (options.max_attempts < 1) options.max_attempts = 1;
  return std::unique_ptr<KubeClient>(
      new KubeClient(config, std::move(http), fs, clock, random, options));
}

std::string KubeClient::Token(bool force_reread) {
  std::lock_guard<std::mutex> lock(token_mu_);
  if (config_.token_file.empty()) return config_.bearer_token;
  const Clock::TimePoint now = clock_.Now();
  if (force_reread || !token_read_ || now - token_read_at_ >= options_.token_refresh_interval) {
    Result<std::string> content = fs_.ReadFile(config_.token_file, size_t{64} * 1024);
    // A failed re-read keeps the last good token: the file is replaced atomically by the
    // kubelet, but a transient error must not drop authentication.
    if (content.ok()) {
      token_ = Trim(*std::move(content));
      token_read_ = true;
      token_read_at_ = now;
    } else if (!token_read_) {
      token_ = config_.bearer_token;
    }
  }
  return token_;
}

Result<HttpResponse> KubeClient::Do(const Call& call) {
  Backoff backoff(options_.backoff, random_);
  const int max_attempts = call.max_attempts > 0 ? call.max_attempts : options_.max_attempts;
  bool reread_token_on_401 = !config_.token_file.empty();
  Status last;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    HttpRequest request;
    request.method = call.method;
    request.url = config_.server + call.path;
    request.body = call.body;
    request.timeout = call.timeout.value_or(options_.request_timeout);
    request.on_body_chunk = call.on_body_chunk;
    request.cancel = call.cancel;
    request.fresh_connection = !call.idempotent;
    request.max_body_bytes =
        call.max_body_bytes > 0 ? call.max_body_bytes : options_.max_object_bytes;
    request.headers.emplace_back("Accept", "application/json");
    if (!call.body.empty()) request.headers.emplace_back("Content-Type", "application/json");
    const std::string token = Token(false);
    if (!token.empty()) request.headers.emplace_back("Authorization", "Bearer " + token);

    HttpResponse response = http_->Send(request);
    if (response.transport_error == TransportError::kNone && response.status >= 200 &&
        response.status < 300) {
      return response;
    }
    if (response.transport_error == TransportError::kNone && response.status == 401 &&
        reread_token_on_401) {
      // The token may have rotated since the last periodic re-read: read it now and retry once,
      // without counting an attempt or sleeping.
      reread_token_on_401 = false;
      (void)Token(true);
      --attempt;
      continue;
    }
    last = response.transport_error == TransportError::kNone
               ? ApiErrorStatus(call.method, call.path, response.status, response.body)
               : TransportErrorStatus(call.method, call.path, response);
    if (call.error_details != nullptr) {
      if (response.transport_error == TransportError::kNone) {
        *call.error_details = ParseApiErrorDetails(response.status, response.body);
      } else {
        *call.error_details = {0, std::string(StatusCodeName(last.code())), last.message(), {}};
      }
    }
    if (!Retriable(response, call.idempotent) || attempt + 1 == max_attempts) break;
    std::chrono::milliseconds delay = backoff.Next();
    if (!response.retry_after.empty()) {
      char* end = nullptr;
      const int64_t seconds = std::strtoll(response.retry_after.c_str(), &end, 10);
      if (end != response.retry_after.c_str() && *end == '\0' && seconds > 0) {
        delay = std::max(delay, std::min<std::chrono::milliseconds>(std::chrono::seconds(seconds),
                                                                    options_.backoff.max));
      }
    }
    if (!clock_.SleepFor(delay, call.cancel)) {
      return Status(StatusCode::kCancelled, call.method + " " + call.path + ": cancelled");
    }
  }
  return last;
}

KubeClient::Call KubeClient::MakeCall(std::string_view method, std::string_view path,
                                      std::string body) {
  Call call;
  call.method = std::string(method);
  call.path = std::string(path);
  call.body = std::move(body);
  return call;
}

Result<std::string> KubeClient::GetBody(std::string_view path) {
  ASSIGN_OR_RETURN(HttpResponse r, Do(MakeCall("GET", path)));
  return std::move(r.body);
}

Result<JsonObject> KubeClient::Get(std::string_view path) {
  ASSIGN_OR_RETURN(std::string body, GetBody(path));
  Result<JsonObject> object = JsonObject::Parse(body);
  if (!object.ok()) return object.status().WithContext("GET " + std::string(path));
  return object;
}

Result<ObjectList> KubeClient::List(std::string_view collection, const ListOptions& options) {
  std::string path(collection);
  AddQuery(&path, "fieldSelector", options.field_selector);
  AddQuery(&path, "labelSelector", options.label_selector);
  AddQuery(&path, "resourceVersion", options.resource_version);
  Call call = MakeCall("GET", path);
  call.max_body_bytes = options_.max_list_bytes;
  ASSIGN_OR_RETURN(HttpResponse r, Do(call));
  Result<JsonObject> parsed = JsonObject::Parse(r.body);
  if (!parsed.ok()) return parsed.status().WithContext("GET " + path);
  JsonObject& list = *parsed;
  ObjectList out;
  out.resource_version = list.MetadataString("resourceVersion");
  const rapidjson::Value* items = list.Find("items");
  if (items != nullptr && items->IsArray()) {
    for (const rapidjson::Value& item : items->GetArray()) {
      JsonObject object;
      object.doc().CopyFrom(item, object.allocator());
      out.items.push_back(std::move(object));
    }
  } else if (items != nullptr && !items->IsNull()) {
    return DataLossError("GET " + path + ": items is not a list");
  }
  return out;
}

Result<JsonObject> KubeClient::Create(std::string_view collection, const JsonObject& object,
                                      ApiErrorDetails* error_details, bool dry_run) {
  std::string path(collection);
  if (options_.strict_field_validation) AddQuery(&path, "fieldValidation", "Strict");
  if (dry_run) AddQuery(&path, "dryRun", "All");
  Call call = MakeCall("POST", path, object.ToString());
  call.idempotent = dry_run;  // a dry run changes nothing: safe to resend
  call.error_details = error_details;
  ASSIGN_OR_RETURN(HttpResponse r, Do(call));
  return JsonObject::Parse(r.body);
}

Result<JsonObject> KubeClient::Update(std::string_view path, const JsonObject& object,
                                      ApiErrorDetails* error_details) {
  std::string target(path);
  if (options_.strict_field_validation) AddQuery(&target, "fieldValidation", "Strict");
  Call call = MakeCall("PUT", target, object.ToString());
  call.error_details = error_details;
  ASSIGN_OR_RETURN(HttpResponse r, Do(call));
  return JsonObject::Parse(r.body);
}

Status KubeClient::Delete(std::string_view path, const DeleteOptions& options) {
  std::string body;
  if (!options.uid.empty() || !options.resource_version.empty()) {
    JsonObject o;
    auto& a = o.allocator();
    o.doc().AddMember("kind", "DeleteOptions", a);
    o.doc().AddMember("apiVersion", "v1", a);
    rapidjson::Value pre(rapidjson::kObjectType);
    if (!options.uid.empty()) pre.AddMember("uid", rapidjson::Value(options.uid.c_str(), a), a);
    if (!options.resource_version.empty()) {
      pre.AddMember("resourceVersion", rapidjson::Value(options.resource_version.c_str(), a), a);
    }
    o.doc().AddMember("preconditions", pre, a);
    body = o.ToString();
  }
  Result<HttpResponse> r = Do(MakeCall("DELETE", path, body));
  return r.status();
}

Result<JsonObject> KubeClient::UpdateWithRetry(std::string_view path,
                                               const std::function<Status(JsonObject&)>& mutate,
                                               int max_attempts, std::string_view put_path) {
  Status last;
  for (int attempt = 0; attempt < std::max(1, max_attempts); ++attempt) {
    ASSIGN_OR_RETURN(JsonObject current, Get(path));
    RETURN_IF_ERROR(mutate(current));
    Result<JsonObject> updated = Update(put_path.empty() ? path : put_path, current);
    if (updated.ok() || !IsConflict(updated.status())) return updated;
    last = updated.status();
  }
  return last.WithContext("still conflicting after " + std::to_string(max_attempts) + " attempts");
}

Status KubeClient::Watch(std::string_view collection, const WatchOptions& options,
                         const std::function<bool(const WatchEvent&)>& on_event,
                         std::stop_token cancel) {
  std::string path(collection);
  AddQuery(&path, "fieldSelector", options.field_selector);
  AddQuery(&path, "labelSelector", options.label_selector);
  AddQuery(&path, "resourceVersion", options.resource_version);
  path += std::string(path.find('?') == std::string::npos ? "?" : "&") + "watch=true";
  if (options.allow_bookmarks) path += "&allowWatchBookmarks=true";
  if (options.timeout_seconds > 0) {
    path += "&timeoutSeconds=" + std::to_string(options.timeout_seconds);
  }

  JsonStreamSplitter splitter(options_.max_object_bytes);
  Status stream_error;
  auto on_chunk = [&](std::string_view bytes) {
    splitter.Append(bytes);
    std::string text;
    while (true) {
      Result<bool> next = splitter.Next(&text);
      if (!next.ok()) {
        stream_error = next.status().WithContext("watch " + path);
        return false;
      }
      if (!*next) break;
      Result<JsonObject> event = JsonObject::Parse(text);
      if (!event.ok() || !event->doc().IsObject()) {
        stream_error =
            DataLossError("watch " + path + ": bad event: " +
                          (event.ok() ? std::string("not an object") : event.status().message()));
        return false;
      }
      const std::string_view type = StringMember(event->doc(), "type");
      auto object_it = event->doc().FindMember("object");
      WatchEvent e;
      if (object_it != event->doc().MemberEnd()) {
        e.object.doc().CopyFrom(object_it->value, e.object.allocator());
      }
      if (type == "ERROR") {
        const rapidjson::Value& o = e.object.doc();
        const int code =
            o.IsObject() && o.HasMember("code") && o["code"].IsInt() ? o["code"].GetInt() : 500;
        stream_error = ApiErrorStatus("watch", path, code, e.object.ToString());
        return false;
      }
      if (type == "ADDED") {
        e.type = WatchEventType::kAdded;
      } else if (type == "MODIFIED") {
        e.type = WatchEventType::kModified;
      } else if (type == "DELETED") {
        e.type = WatchEventType::kDeleted;
      } else if (type == "BOOKMARK") {
        e.type = WatchEventType::kBookmark;
      } else {
        stream_error =
            DataLossError("watch " + path + ": unknown event type " + LogQuote(type, 64));
        return false;
      }
      if (!on_event(e)) return false;
    }
    return true;
  };
  const std::chrono::milliseconds timeout =
      options.timeout_seconds > 0
          ? std::chrono::milliseconds(std::chrono::seconds(options.timeout_seconds) +
                                      options_.watch_timeout_margin)
          : std::chrono::milliseconds(0);
  Call call = MakeCall("GET", path);
  call.max_attempts = 1;
  call.timeout = timeout;
  call.on_body_chunk = on_chunk;
  call.cancel = std::move(cancel);
  Result<HttpResponse> r = Do(call);
  if (!stream_error.ok()) return stream_error;
  if (!r.ok()) {
    // A timeout of 0 means "no limit" to libcurl; an expired timeout with a limit is the
    // server failing to end the stream, reported as is.
    return r.status();
  }
  return Status::Ok();
}

}  // namespace dracpu::kube
