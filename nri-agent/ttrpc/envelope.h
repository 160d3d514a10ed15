// The ttrpc Request/Response envelopes (protocols.md §1.4) as plain structs, so the rest of the
// transport never includes generated code. envelope.cc is the only file of nri-agent/ttrpc that
// sees ttrpc.pb.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dracpu::ttrpc {

struct Request {
  std::string service;       // "nri.pkg.api.v1alpha1.Plugin"
  std::string method;        // "Configure"
  std::string payload;       // serialized request message
  int64_t timeout_nano = 0;  // remaining client deadline; 0 = none
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct Response {
  Status status;        // OK, or the error the handler returned (code and message)
  std::string payload;  // serialized response message; empty unless status is OK
};

std::string EncodeRequest(const Request& request);
// INVALID_ARGUMENT when `bytes` is not a ttrpc.Request.
Result<Request> DecodeRequest(std::string_view bytes);

// A status code outside the canonical range is sent as is; see DecodeResponse for the reverse.
std::string EncodeResponse(const Response& response);
// DATA_LOSS when `bytes` is not a ttrpc.Response. A status code the peer sent outside 1..16
// becomes UNKNOWN, keeping the message.
Result<Response> DecodeResponse(std::string_view bytes);

}  // namespace dracpu::ttrpc
