// HttpServer: the small HTTP/1.1 endpoint each agent serves on --bind-address for /metrics,
// /healthz and /readyz. GET and HEAD only; unknown paths are 404, other methods 405.
// One I/O thread (Boost.Asio/Beast); handlers run on it, so they must be quick and thread-safe
// with respect to the rest of the agent. Slow clients are dropped after 10 s.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

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
  // Binds and starts serving `routes` (exact paths). Port 0 picks a free port (see port()).
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& bind_address,
                                                   std::map<std::string, HttpHandler> routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  // Stops accepting, closes connections and joins the I/O thread. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dracpu
