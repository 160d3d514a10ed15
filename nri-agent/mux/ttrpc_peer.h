// TtrpcPeer: one side of an NRI trunk, wired the way NRI uses it (protocols.md §2.3): a ttrpc
// Server on one logical connection and a ttrpc Client on the other, both over one Multiplexer.
// A plugin serves kPluginServiceConn and calls on kRuntimeServiceConn; a runtime (the
// simulator) the reverse. Because both live on one event loop, the server keeps answering
// (e.g. Configure) while an outgoing call (e.g. RegisterPlugin) is still waiting.
//
// When the trunk closes, the server drops pending responders, every pending call completes with
// UNAVAILABLE, then `on_close` runs (it must not destroy the peer; Post that).
//
// Thread safety: none; use from the loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/event_loop.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "nri-agent/mux/multiplexer.h"
#include "nri-agent/ttrpc/client.h"
#include "nri-agent/ttrpc/server.h"

namespace dracpu::mux {

class TtrpcPeer {
 public:
  using CloseCallback = std::function<void(const Status& reason)>;

  static Result<std::unique_ptr<TtrpcPeer>> Create(loop::EventLoop& loop, UniqueFd trunk,
                                                   uint32_t serve_conn, uint32_t call_conn,
                                                   CloseCallback on_close);
  // The plugin's side: serves conn 1, calls on conn 2.
  static Result<std::unique_ptr<TtrpcPeer>> ForPlugin(loop::EventLoop& loop, UniqueFd trunk,
                                                      CloseCallback on_close) {
    return Create(loop, std::move(trunk), kPluginServiceConn, kRuntimeServiceConn,
                  std::move(on_close));
  }
  // The runtime's side: serves conn 2, calls on conn 1.
  static Result<std::unique_ptr<TtrpcPeer>> ForRuntime(loop::EventLoop& loop, UniqueFd trunk,
                                                       CloseCallback on_close) {
    return Create(loop, std::move(trunk), kRuntimeServiceConn, kPluginServiceConn,
                  std::move(on_close));
  }

  ttrpc::Server& server() { return *server_; }
  ttrpc::Client& client() { return *client_; }
  Multiplexer& mux() { return *mux_; }
  void Close(const Status& reason) { mux_->Close(reason); }
  bool closed() const { return mux_->closed(); }

 private:
  explicit TtrpcPeer(CloseCallback on_close) : on_close_(std::move(on_close)) {}
  void OnTrunkClosed(const Status& reason);

  CloseCallback on_close_;
  std::unique_ptr<Multiplexer> mux_;
  std::unique_ptr<ttrpc::Server> server_;
  std::unique_ptr<ttrpc::Client> client_;
};

}  // namespace dracpu::mux
