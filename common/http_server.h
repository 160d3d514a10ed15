// HttpServer: the small HTTP/1.1 endpoint each agent serves on --bind-address for /metrics,
// /healthz and /readyz. GET and HEAD only; unknown paths are 404, other methods 405.
//
// It has no thread of its own: it serves on the agent's event loop (common/event_loop.h), the
// dra-agent's main loop and the nri-agent's NRI loop, so the handlers run on that thread, one
// at a time, between the loop's other work, and must be quick. What a connection does with its
// bytes is HttpConnection (http_connection.h). A client gets 10 s for each request (slow ones
// are dropped), and at most 64 connections are open at once (more are closed on accept).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/event_loop.h"
#include "common/status.h"

namespace dracpu {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse()>;

struct BindAddress {
  std::string host;  // "" means all interfaces
  int port = 0;
};

// Parses Go-style listen addresses: ":8080", "0.0.0.0:8080", "127.0.0.1:0", "[::1]:9090".
Result<BindAddress> ParseBindAddress(const std::string& text);

class HttpServer {
 public:
  // Binds and starts serving `routes` (exact paths) on `loop`. Port 0 picks a free port (see
  // port()). An empty host listens on every IPv6 and IPv4 address (IPv4 only where the kernel
  // has no IPv6). Call on the loop thread or while the loop does not run; `loop` must outlive
  // the server.
  static Result<std::unique_ptr<HttpServer>> Start(loop::EventLoop& loop,
                                                   const std::string& bind_address,
                                                   std::map<std::string, HttpHandler> routes);
  // Stop(), on the loop thread or while the loop does not run.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  // Stops accepting and closes every connection. Idempotent; same thread rule as Start.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dracpu
