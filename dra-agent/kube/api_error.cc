#include "dra-agent/kube/api_error.h"

#include "common/log_escape.h"
#include "dra-agent/kube/json_object.h"

namespace dracpu::kube {

Status ApiErrorStatus(std::string_view method, std::string_view path, int http_status,
                      std::string_view body) {
  std::string reason;
  std::string message;
  Result<JsonObject> parsed = JsonObject::Parse(body);
  if (parsed.ok() && parsed->doc().IsObject() && parsed->Kind() == "Status") {
    // The server's words go into our logs: escaped and bounded.
    reason = LogEscape(StringMember(parsed->doc(), "reason"), 64);
    message = LogEscape(StringMember(parsed->doc(), "message"), 1024);
  } else if (!body.empty()) {
    // Not a Status (a proxy's HTML page, say): keep a bounded excerpt.
    message = LogEscape(body, 200);
  }
  StatusCode code = StatusCode::kUnavailable;
  switch (http_status) {
    case 400:
    case 422:
      code = StatusCode::kInvalidArgument;
      break;
    case 401:
      code = StatusCode::kUnauthenticated;
      break;
    case 403:
      code = StatusCode::kPermissionDenied;
      break;
    case 404:
      code = StatusCode::kNotFound;
      break;
    case 409:
      code = reason == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kAborted;
      break;
    case 410:
      code = StatusCode::kOutOfRange;
      break;
    case 429:
      code = StatusCode::kResourceExhausted;
      break;
    default:
      break;
  }
  std::string text =
      std::string(method) + " " + std::string(path) + ": HTTP " + std::to_string(http_status);
  if (!reason.empty()) text += " " + reason;
  if (!message.empty()) text += ": " + message;
  return Status(code, std::move(text));
}

ApiErrorDetails ParseApiErrorDetails(int http_status, std::string_view body) {
  ApiErrorDetails d;
  d.http_status = http_status;
  Result<JsonObject> parsed = JsonObject::Parse(body);
  if (!parsed.ok() || !parsed->doc().IsObject() || parsed->Kind() != "Status") return d;
  const rapidjson::Value& status = parsed->doc();
  d.reason = std::string(StringMember(status, "reason"));
  d.message = std::string(StringMember(status, "message"));
  const rapidjson::Value* causes = parsed->Find("details.causes");
  if (causes == nullptr || !causes->IsArray()) return d;
  for (const rapidjson::Value& c : causes->GetArray()) {
    if (!c.IsObject()) continue;
    d.causes.push_back({std::string(StringMember(c, "reason")),
                        std::string(StringMember(c, "field")),
                        std::string(StringMember(c, "message"))});
  }
  return d;
}

Status TransportErrorStatus(std::string_view method, std::string_view path,
                            const HttpResponse& response) {
  StatusCode code = StatusCode::kUnavailable;
  if (response.transport_error == TransportError::kTimeout) code = StatusCode::kDeadlineExceeded;
  if (response.transport_error == TransportError::kCancelled) code = StatusCode::kCancelled;
  if (response.transport_error == TransportError::kBodyTooLarge) {
    code = StatusCode::kResourceExhausted;
  }
  return Status(code,
                std::string(method) + " " + std::string(path) + ": " + response.error_message);
}

}  // namespace dracpu::kube
