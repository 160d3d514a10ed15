// ttrpc Client: unary calls on one connection (protocols.md §1). Stream ids are odd and
// increasing (1, 3, 5, ...); any number of calls may be outstanding and answers are matched by
// stream id, in whatever order they come.
//
// Call() never blocks: the callback runs later on the event loop with the serialized response
// message or an error: the peer's status (code and message as sent), DEADLINE_EXCEEDED when the
// per-call timeout fires first (the stream is then forgotten and a late answer dropped, as
// ttrpc has no cancel frame), UNAVAILABLE when the connection closes, RESOURCE_EXHAUSTED when
// the request or the answer is over 4 MiB, DATA_LOSS for an answer that does not parse.
// Every callback runs exactly once and never inside Call() itself.
//
// Thread safety: none; use from the event loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/event_loop.h"
#include "common/status.h"
#include "nri-agent/ttrpc/frame.h"
#include "nri-agent/ttrpc/message_sink.h"

namespace dracpu::ttrpc {

class Client {
 public:
  using Callback = std::function<void(Result<std::string> response_payload)>;

  // `sink` and `loop` must outlive the Client.
  Client(MessageSink& sink, loop::EventLoop& loop);
  ~Client();  // pending callbacks are dropped without being called
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends service/method(payload); `timeout` > 0 bounds the call and is sent as timeout_nano.
  void Call(std::string_view service, std::string_view method, std::string payload,
            std::chrono::nanoseconds timeout, Callback done);

  // Feeds bytes of the connection; non-OK means a broken stream: close the connection.
  Status OnBytes(std::string_view bytes);

  // The connection is gone: every pending call completes with UNAVAILABLE(reason), and later
  // calls fail the same way.
  void OnClosed(const Status& reason);

  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    Callback done;
    loop::EventLoop::TimerId timer = 0;  // 0 = no timeout
  };
  // Completes stream `id` (if still pending) with `result`.
  void Complete(uint32_t id, Result<std::string> result);
  // Runs `done(status)` from the loop, not from inside Call().
  void FailLater(Callback done, Status status);

  MessageSink& sink_;
  loop::EventLoop& loop_;
  FrameDecoder decoder_;
  uint32_t next_stream_id_ = 1;
  std::unordered_map<uint32_t, Pending> pending_;
  Status closed_;  // non-OK once the connection is gone
  // Timers and posted failures hold a weak reference: they may fire after the Client is gone.
  std::shared_ptr<Client*> self_;
};

}  // namespace dracpu::ttrpc
