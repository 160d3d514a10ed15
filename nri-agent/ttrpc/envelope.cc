#include "nri-agent/ttrpc/envelope.h"

#include "ttrpc.pb.h"

namespace dracpu::ttrpc {

std::string EncodeRequest(const Request& request) {
  ::ttrpc::Request pb;
  pb.set_service(request.service);
  pb.set_method(request.method);
  pb.set_payload(request.payload);
  pb.set_timeout_nano(request.timeout_nano);
  for (const auto& [key, value] : request.metadata) {
    auto* kv = pb.add_metadata();
    kv->set_key(key);
    kv->set_value(value);
  }
  return pb.SerializeAsString();
}

Result<Request> DecodeRequest(std::string_view bytes) {
  ::ttrpc::Request pb;
  if (!pb.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgumentError("ttrpc request of " + std::to_string(bytes.size()) +
                                " bytes does not parse");
  }
  Request request;
  request.service = std::move(*pb.mutable_service());
  request.method = std::move(*pb.mutable_method());
  request.payload = std::move(*pb.mutable_payload());
  request.timeout_nano = pb.timeout_nano();
  for (auto& kv : *pb.mutable_metadata()) {
    request.metadata.emplace_back(std::move(*kv.mutable_key()), std::move(*kv.mutable_value()));
  }
  return request;
}

std::string EncodeResponse(const Response& response) {
  ::ttrpc::Response pb;
  if (!response.status.ok()) {
    pb.mutable_status()->set_code(static_cast<int32_t>(response.status.code()));
    pb.mutable_status()->set_message(response.status.message());
  } else {
    pb.set_payload(response.payload);
  }
  return pb.SerializeAsString();
}

Result<Response> DecodeResponse(std::string_view bytes) {
  ::ttrpc::Response pb;
  if (!pb.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return DataLossError("ttrpc response of " + std::to_string(bytes.size()) +
                         " bytes does not parse");
  }
  Response response;
  const int32_t code = pb.has_status() ? pb.status().code() : 0;
  if (code != 0) {
    const StatusCode status_code =
        (code >= 1 && code <= 16) ? static_cast<StatusCode>(code) : StatusCode::kUnknown;
    response.status = Status(status_code, pb.status().message());
  } else {
    response.payload = std::move(*pb.mutable_payload());
  }
  return response;
}

}  // namespace dracpu::ttrpc
