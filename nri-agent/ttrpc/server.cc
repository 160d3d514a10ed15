#include "nri-agent/ttrpc/server.h"

#include "nri-agent/ttrpc/envelope.h"

namespace dracpu::ttrpc {

struct Server::Shared {
  MessageSink* sink;  // null once closed
  size_t in_flight = 0;
};

namespace {

// Sends one Response; an answer too large for the peer becomes RESOURCE_EXHAUSTED, as Go's
// server does. Send errors mean the connection is closing; its owner reports that.
void SendResponse(MessageSink& sink, uint32_t stream_id, const Response& response) {
  Result<std::string> frame =
      EncodeFrame(stream_id, MessageType::kResponse, 0, EncodeResponse(response));
  if (!frame.ok()) {
    frame = EncodeFrame(stream_id, MessageType::kResponse, 0,
                        EncodeResponse(Response{frame.status(), {}}));
  }
  if (frame.ok()) sink.Send(std::move(frame).value()).IgnoreError();
}

}  // namespace

Server::Server(MessageSink& sink) : shared_(std::make_shared<Shared>(Shared{&sink})) {}

Server::~Server() { OnClosed(); }

void Server::Register(std::string_view service, std::string_view method, Handler handler) {
  services_[std::string(service)] = true;
  handlers_[std::string(service) + "/" + std::string(method)] = std::move(handler);
}

void Server::OnClosed() { shared_->sink = nullptr; }

size_t Server::in_flight() const { return shared_->in_flight; }

void Server::Reply(uint32_t stream_id, const Status& status) {
  if (shared_->sink != nullptr) SendResponse(*shared_->sink, stream_id, Response{status, {}});
}

Status Server::OnBytes(std::string_view bytes) {
  std::vector<Frame> frames;
  Status status = decoder_.Feed(bytes, &frames);
  // Frames completed before a broken header are still served.
  for (const Frame& frame : frames) {
    if (shared_->sink == nullptr) break;
    if (frame.header.type == static_cast<uint8_t>(MessageType::kRequest)) HandleRequest(frame);
    // Data frames (streaming) and unknown types: ignored, as Go does for forward compatibility.
  }
  return status;
}

void Server::HandleRequest(const Frame& frame) {
  const uint32_t id = frame.header.stream_id;
  if (id % 2 == 0) {
    Reply(id, InvalidArgumentError("StreamID must be odd for client initiated streams"));
    return;
  }
  if (id <= last_stream_id_) {
    Reply(id, InvalidArgumentError("StreamID cannot be re-used and must increment"));
    return;
  }
  last_stream_id_ = id;
  if (frame.oversized) {
    Reply(id, ResourceExhaustedError("message length " + std::to_string(frame.header.length) +
                                     " exceeds maximum message size of " +
                                     std::to_string(kMaxMessageSize)));
    return;
  }
  Result<Request> request = DecodeRequest(frame.data);
  if (!request.ok()) {
    Reply(id, request.status());
    return;
  }
  auto handler = handlers_.find(request->service + "/" + request->method);
  if (handler == handlers_.end()) {
    Reply(id, UnimplementedError(services_.count(request->service) != 0
                                     ? "method " + request->method
                                     : "service " + request->service));
    return;
  }
  CallInfo call{id, std::move(request->service), std::move(request->method), request->timeout_nano,
                std::move(request->metadata)};
  ++shared_->in_flight;
  std::weak_ptr<Shared> weak = shared_;
  auto answered = std::make_shared<bool>(false);
  Responder done = [weak, id, answered](Result<std::string> result) {
    std::shared_ptr<Shared> shared = weak.lock();
    if (!shared || *answered) return;  // server gone, or a second answer: dropped
    *answered = true;
    --shared->in_flight;
    if (shared->sink == nullptr) return;
    Response response;
    if (result.ok()) {
      response.payload = std::move(result).value();
    } else {
      response.status = result.status();
    }
    SendResponse(*shared->sink, id, response);
  };
  // A copy of the handler: it may re-Register itself while running.
  Handler h = handler->second;
  h(call, std::move(request->payload), std::move(done));
}

}  // namespace dracpu::ttrpc
