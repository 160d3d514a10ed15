#include "nri-agent/mux/ttrpc_peer.h"

namespace dracpu::mux {

Result<std::unique_ptr<TtrpcPeer>> TtrpcPeer::Create(loop::EventLoop& loop, UniqueFd trunk,
                                                     uint32_t serve_conn, uint32_t call_conn,
                                                     CloseCallback on_close) {
  if (serve_conn == 0 || call_conn == 0 || serve_conn == call_conn) {
    return InvalidArgumentError("ttrpc peer: connection ids must be distinct and non-zero");
  }
  std::unique_ptr<TtrpcPeer> peer(new TtrpcPeer(std::move(on_close)));
  TtrpcPeer* raw = peer.get();
  ASSIGN_OR_RETURN(
      peer->mux_, Multiplexer::Create(loop, std::move(trunk),
                                      [raw](const Status& reason) { raw->OnTrunkClosed(reason); }));
  peer->server_ = std::make_unique<ttrpc::Server>(peer->mux_->Sink(serve_conn));
  peer->client_ = std::make_unique<ttrpc::Client>(peer->mux_->Sink(call_conn), loop);
  // Nothing is read before the loop runs again, so the receivers are in place in time.
  peer->mux_->Open(serve_conn,
                   [raw](std::string_view bytes) { return raw->server_->OnBytes(bytes); });
  peer->mux_->Open(call_conn,
                   [raw](std::string_view bytes) { return raw->client_->OnBytes(bytes); });
  return peer;
}

void TtrpcPeer::OnTrunkClosed(const Status& reason) {
  server_->OnClosed();
  client_->OnClosed(reason);
  if (on_close_) {
    CloseCallback cb = std::move(on_close_);
    on_close_ = nullptr;
    cb(reason);
  }
}

}  // namespace dracpu::mux
