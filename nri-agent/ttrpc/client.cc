#include "nri-agent/ttrpc/client.h"

#include <algorithm>
#include <vector>

#include "nri-agent/ttrpc/envelope.h"

namespace dracpu::ttrpc {

Client::Client(MessageSink& sink, loop::EventLoop& loop)
    : sink_(sink), loop_(loop), self_(std::make_shared<Client*>(this)) {}

Client::~Client() {
  for (auto& [id, pending] : pending_) {
    if (pending.timer != 0) loop_.CancelTimer(pending.timer);
  }
}

void Client::FailLater(Callback done, Status status) {
  std::weak_ptr<Client*> weak = self_;
  loop_.AddTimer(std::chrono::nanoseconds(0),
                 [weak, done = std::move(done), status = std::move(status)]() {
                   if (weak.lock()) done(status);
                 });
}

void Client::Call(std::string_view service, std::string_view method, std::string payload,
                  std::chrono::nanoseconds timeout, Callback done) {
  if (!closed_.ok()) {
    FailLater(std::move(done), closed_);
    return;
  }
  // Stream ids are odd and must grow; at the end of the 32-bit space the connection cannot
  // carry another call (Go would wrap and be refused by the server).
  if (next_stream_id_ > 0xFFFFFFFDu) {
    FailLater(std::move(done), ResourceExhaustedError("ttrpc stream ids exhausted"));
    return;
  }
  const uint32_t id = next_stream_id_;
  next_stream_id_ += 2;

  Request request;
  request.service = std::string(service);
  request.method = std::string(method);
  request.payload = std::move(payload);
  request.timeout_nano = timeout.count() > 0 ? timeout.count() : 0;
  Result<std::string> frame = EncodeFrame(id, MessageType::kRequest, 0, EncodeRequest(request));
  if (!frame.ok()) {
    FailLater(std::move(done), frame.status().WithContext(request.service + "/" + request.method));
    return;
  }
  // Registered before sending: a sink that delivers synchronously may bring the answer back
  // before Send returns.
  Pending pending{std::move(done), 0};
  if (timeout.count() > 0) {
    std::weak_ptr<Client*> weak = self_;
    pending.timer = loop_.AddTimer(timeout, [weak, id, service = request.service,
                                             method = request.method]() {
      std::shared_ptr<Client*> self = weak.lock();
      if (!self) return;
      Client* client = *self;
      auto it = client->pending_.find(id);
      if (it == client->pending_.end()) return;
      it->second.timer = 0;  // this timer is the one running
      client->Complete(id, DeadlineExceededError(service + "/" + method + ": no answer in time"));
    });
  }
  pending_.emplace(id, std::move(pending));
  if (Status sent = sink_.Send(std::move(frame).value()); !sent.ok()) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;  // already completed (the connection closed meanwhile)
    Pending failed = std::move(it->second);
    pending_.erase(it);
    if (failed.timer != 0) loop_.CancelTimer(failed.timer);
    FailLater(std::move(failed.done), sent);
  }
}

void Client::Complete(uint32_t id, Result<std::string> result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending pending = std::move(it->second);
  pending_.erase(it);
  if (pending.timer != 0) loop_.CancelTimer(pending.timer);
  pending.done(std::move(result));
}

Status Client::OnBytes(std::string_view bytes) {
  std::vector<Frame> frames;
  Status status = decoder_.Feed(bytes, &frames);
  for (Frame& frame : frames) {
    if (frame.header.type != static_cast<uint8_t>(MessageType::kResponse)) continue;
    const uint32_t id = frame.header.stream_id;
    // Answers to streams we gave up on (timeout) or never opened are dropped, as in Go.
    if (pending_.count(id) == 0) continue;
    if (frame.oversized) {
      Complete(id, ResourceExhaustedError(
                       "ttrpc response of " + std::to_string(frame.header.length) +
                       " bytes exceeds the maximum of " + std::to_string(kMaxMessageSize)));
      continue;
    }
    Result<Response> response = DecodeResponse(frame.data);
    if (!response.ok()) {
      Complete(id, response.status());
    } else if (!response->status.ok()) {
      Complete(id, response->status);
    } else {
      Complete(id, std::move(response->payload));
    }
  }
  return status;
}

void Client::OnClosed(const Status& reason) {
  if (!closed_.ok()) return;
  closed_ = UnavailableError("ttrpc connection closed: " + reason.ToString());
  // Complete in stream order; callbacks may start new calls, which now fail via FailLater.
  std::vector<uint32_t> ids;
  for (const auto& [id, pending] : pending_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint32_t id : ids) Complete(id, closed_);
}

}  // namespace dracpu::ttrpc
