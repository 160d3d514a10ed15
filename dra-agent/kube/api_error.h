// How Kubernetes API failures become Status values.
//
// Message: "<METHOD> <path>: HTTP <code> <reason>: <Status.message>" (reason and message from
// the Kubernetes Status body when there is one), so a log line says what failed and why.
// Codes (each Kubernetes outcome a caller branches on has its own):
//   400 BadRequest, 422 Invalid      -> INVALID_ARGUMENT (do not retry blindly)
//   401                              -> UNAUTHENTICATED
//   403                              -> PERMISSION_DENIED
//   404 NotFound                     -> NOT_FOUND
//   409 AlreadyExists                -> ALREADY_EXISTS
//   409 Conflict (stale rv, failed precondition) -> ABORTED: re-read and retry
//   410 Gone / Expired               -> OUT_OF_RANGE: the resourceVersion is too old; re-list
//   429                              -> RESOURCE_EXHAUSTED
//   5xx and other statuses           -> UNAVAILABLE
// Transport errors: timeout -> DEADLINE_EXCEEDED, cancelled -> CANCELLED, a body over the
// request's limit -> RESOURCE_EXHAUSTED, others -> UNAVAILABLE.
// The server's reason and message are escaped (common/log_escape.h) and bounded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "dra-agent/kube/http_client.h"

namespace dracpu::kube {

// The structured part of a refused request, for callers that report causes (the slice
// publisher: log once per cause, count by code and reason, /readyz).
struct ApiErrorCause {
  std::string reason;   // "FieldValueRequired"
  std::string field;    // "spec.devices[0].capacity[dra.cpu/cpu].requestPolicy.default"
  std::string message;  // "Required value: required when validRange is defined"
};
struct ApiErrorDetails {
  int http_status = 0;  // 0: no HTTP answer (transport error)
  std::string reason;   // Status.reason ("Invalid"), or the transport error's code name
  std::string message;  // Status.message (or the transport error)
  std::vector<ApiErrorCause> causes;  // Status.details.causes
};
// Reads a non-2xx response; a body that is not a Status gives only the status code.
ApiErrorDetails ParseApiErrorDetails(int http_status, std::string_view body);

// The Status for a non-2xx response; `body` may hold a Kubernetes Status object.
Status ApiErrorStatus(std::string_view method, std::string_view path, int http_status,
                      std::string_view body);
Status TransportErrorStatus(std::string_view method, std::string_view path,
                            const HttpResponse& response);

inline bool IsConflict(const Status& s) { return s.code() == StatusCode::kAborted; }
inline bool IsGone(const Status& s) { return s.code() == StatusCode::kOutOfRange; }
inline bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }
inline bool IsInvalid(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }

}  // namespace dracpu::kube
