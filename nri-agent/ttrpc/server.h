// ttrpc Server: serves unary calls arriving on one connection (protocols.md §1).
//
// Bytes of the connection are pushed in with OnBytes(); answers go out through a MessageSink.
// Handlers are looked up by "service/method" and complete through a Responder, which may be
// called later (after an outgoing call finished, say) but exactly once; the server keeps serving
// other calls meanwhile, so a handler never blocks the connection.
//
// Answers the way Go's server does: UNIMPLEMENTED "service X"/"method Y" for unknown names,
// RESOURCE_EXHAUSTED for a request over 4 MiB (and for an answer that would be), INVALID_ARGUMENT
// for an even or non-increasing stream id or an unparseable envelope. Data frames and unknown
// message types are ignored.
//
// Thread safety: none; use from the event loop thread. Responders too.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "nri-agent/ttrpc/frame.h"
#include "nri-agent/ttrpc/message_sink.h"

namespace dracpu::ttrpc {

struct CallInfo {
  uint32_t stream_id = 0;
  std::string service;
  std::string method;
  int64_t timeout_nano = 0;  // the client's remaining deadline; 0 = none
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Completes a call: a value is the serialized response message, a Status the error sent back.
// Calling it after the connection closed (or the Server is gone) does nothing.
using Responder = std::function<void(Result<std::string>)>;
using Handler = std::function<void(const CallInfo& call, std::string payload, Responder done)>;

class Server {
 public:
  // `sink` must outlive the Server.
  explicit Server(MessageSink& sink);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers (or replaces) the handler of `service`/`method`.
  void Register(std::string_view service, std::string_view method, Handler handler);

  // Feeds bytes of the connection. A non-OK Status is a broken stream (see
  // FrameDecoder::Feed): the caller closes the connection.
  Status OnBytes(std::string_view bytes);

  // The connection is gone: pending Responders become no-ops.
  void OnClosed();

  // Calls received and not yet answered.
  size_t in_flight() const;

 private:
  struct Shared;  // what outstanding Responders reach: the sink and the in-flight count
  void HandleRequest(const Frame& frame);
  void Reply(uint32_t stream_id, const Status& status);

  FrameDecoder decoder_;
  std::map<std::string, Handler, std::less<>> handlers_;  // key "service/method"
  std::map<std::string, bool, std::less<>> services_;     // known service names
  uint32_t last_stream_id_ = 0;
  std::shared_ptr<Shared> shared_;
};

}  // namespace dracpu::ttrpc
