// Fuzz target ttrpc_envelope: the protobuf envelopes inside ttrpc frames (selector bit 0: a
// Request as the Server reads it; 1: a Response as the Client reads it). Contracts: whatever
// decodes re-encodes and decodes to the same value, and re-encoding is stable; a response code
// outside the canonical range arrives as UNKNOWN; a failure is INVALID_ARGUMENT (request) or
// DATA_LOSS (response).
#include "nri-agent/ttrpc/envelope.h"
#include "tests/fuzz/fuzz_check.h"

namespace dracpu::fuzz {
namespace {

bool SameRequest(const ttrpc::Request& a, const ttrpc::Request& b) {
  return a.service == b.service && a.method == b.method && a.payload == b.payload &&
         a.timeout_nano == b.timeout_nano && a.metadata == b.metadata;
}

void CheckRequest(std::string_view bytes, std::string_view input) {
  Result<ttrpc::Request> r = ttrpc::DecodeRequest(bytes);
  if (!r.ok()) {
    Check(r.status().code() == StatusCode::kInvalidArgument,
          "a bad request is not INVALID_ARGUMENT", input);
    return;
  }
  const std::string encoded = ttrpc::EncodeRequest(*r);
  Result<ttrpc::Request> again = ttrpc::DecodeRequest(encoded);
  Check(again.ok() && SameRequest(*r, *again), "a request does not round-trip", input);
  Check(ttrpc::EncodeRequest(*again) == encoded, "re-encoding a request is not stable", input);
}

void CheckResponse(std::string_view bytes, std::string_view input) {
  Result<ttrpc::Response> r = ttrpc::DecodeResponse(bytes);
  if (!r.ok()) {
    Check(r.status().code() == StatusCode::kDataLoss, "a bad response is not DATA_LOSS", input);
    return;
  }
  const int code = static_cast<int>(r->status.code());
  Check(code >= 0 && code <= 16, "a response code is outside the canonical range", input);
  Check(r->status.ok() || r->payload.empty(), "an error response kept a payload", input);
  const std::string encoded = ttrpc::EncodeResponse(*r);
  Result<ttrpc::Response> again = ttrpc::DecodeResponse(encoded);
  Check(again.ok() && again->status.code() == r->status.code() &&
            again->status.message() == r->status.message() && again->payload == r->payload,
        "a response does not round-trip", input);
  Check(ttrpc::EncodeResponse(*again) == encoded, "re-encoding a response is not stable", input);
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = dracpu::fuzz::AsText(data, size);
  const dracpu::fuzz::Selected s = dracpu::fuzz::Select(input);
  if (s.selector & 1) {
    dracpu::fuzz::CheckResponse(s.rest, input);
  } else {
    dracpu::fuzz::CheckRequest(s.rest, input);
  }
  return 0;
}
