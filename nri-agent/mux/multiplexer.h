// Multiplexer: the NRI "trunk" (protocols.md §2.2-§2.3). One connected stream socket carries
// several logical connections, each a byte stream of its own, framed with 8-byte headers.
// There is no open/close signalling: a connection exists once both sides use its id; frames for
// an id nobody opened here are dropped, as Go does.
//
// Reading: the trunk fd is non-blocking and watched on the EventLoop; each frame's payload is
// handed to its connection's receiver as it arrives (receivers re-assemble their own messages;
// frames of different connections interleave). Writing: Sink(conn).Send(message) frames one
// whole message as Go's reader needs it (AppendMessageFrames) and queues it; the queue drains
// as the socket accepts, so Send never blocks the loop.
//
// A peer that stops reading cannot make the queue grow without bound: a Send that would queue
// more than kMaxPendingWriteBytes fails with RESOURCE_EXHAUSTED and closes the trunk (the agent
// reconnects and resynchronizes; nothing is lost, the state is in shared memory).
//
// Closing: on EOF, a socket error, an oversized frame, a receiver's error, or Close(), the
// trunk is unwatched and closed, every Send fails with UNAVAILABLE, and the close callback runs
// once with the reason. Neither a receiver nor the close callback may destroy the Multiplexer
// (Post that to the loop instead).
//
// Thread safety: none; use from the loop thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/event_loop.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "nri-agent/mux/frame.h"
#include "nri-agent/ttrpc/message_sink.h"

namespace dracpu::mux {

// 16 maximal ttrpc messages: far more than any answer burst (a Synchronize of 1000 containers
// answers about 100 KiB), far less than memory.
inline constexpr size_t kMaxPendingWriteBytes = 64u << 20;

class Multiplexer {
 public:
  // Bytes of one logical connection; a non-OK Status closes the whole trunk with that reason.
  using Receiver = std::function<Status(std::string_view bytes)>;
  using CloseCallback = std::function<void(const Status& reason)>;

  // Takes the connected trunk (a unix stream socket; tests pass one end of a socketpair), makes
  // it non-blocking and starts reading. Errors: fcntl/epoll failures.
  static Result<std::unique_ptr<Multiplexer>> Create(loop::EventLoop& loop, UniqueFd trunk,
                                                     CloseCallback on_close);
  ~Multiplexer();
  Multiplexer(const Multiplexer&) = delete;
  Multiplexer& operator=(const Multiplexer&) = delete;

  // Opens logical connection `conn_id` (not 0): its bytes go to `receiver`. Replaces an earlier
  // receiver of the same id.
  void Open(uint32_t conn_id, Receiver receiver);

  // The writing side of `conn_id`, valid as long as the Multiplexer. Each Send carries one whole
  // message (see ttrpc::MessageSink).
  ttrpc::MessageSink& Sink(uint32_t conn_id);

  // Closes the trunk now (idempotent); the close callback runs with `reason`.
  void Close(const Status& reason);

  bool closed() const { return !trunk_.valid(); }
  // Bytes queued and not yet accepted by the socket.
  size_t pending_write_bytes() const { return out_.size() - out_sent_; }

 private:
  class ConnSink;
  Multiplexer(loop::EventLoop& loop, UniqueFd trunk, CloseCallback on_close);
  Status SendMessage(uint32_t conn_id, std::string_view message);
  void CloseFromLoop(const Status& reason);
  void OnEvents(uint32_t events);
  Status ReadAvailable();
  Status Flush();

  loop::EventLoop& loop_;
  UniqueFd trunk_;
  CloseCallback on_close_;
  loop::EventLoop::WatchId watch_ = 0;
  bool want_write_ = false;
  FrameDecoder decoder_;
  std::map<uint32_t, Receiver> receivers_;
  std::map<uint32_t, std::unique_ptr<ConnSink>> sinks_;
  std::string out_;
  size_t out_sent_ = 0;
  std::string read_buf_;
  // Deferred tasks hold a weak reference: they may fire after the Multiplexer is gone.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace dracpu::mux
