// SimApiServer: SimState behind HTTP/1.1 or HTTPS (Boost.Beast, one thread per connection).
//
//   auto state = std::make_shared<SimState>();
//   auto server = SimApiServer::Start({.port = 0}, state);   // 127.0.0.1, a free port
//   (*server)->url();   // "http://127.0.0.1:40123"
//
// Watches stream newline-delimited JSON events with chunked encoding; BOOKMARKs are sent every
// `bookmark_interval` (and on SimState::RequestBookmarks) when the client allows them. Faults from
// SimState apply before a request is served. Stop() (or the destructor) closes the listener and
// every connection, and joins all threads; the SimState lives on for a restarted server, as etcd
// would behind a restarted kube-apiserver.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "tests/sim/apiserver/sim_state.h"

namespace dracpu::sim {

struct SimServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;          // 0: any free port
  std::string tls_cert_file;  // PEM; both set -> HTTPS
  std::string tls_key_file;
  // PEM CA file: when set (with TLS), clients must present a certificate it signed.
  std::string client_ca_file;
  std::chrono::milliseconds bookmark_interval{1000};
};

class SimApiServer {
 public:
  static Result<std::unique_ptr<SimApiServer>> Start(const SimServerOptions& options,
                                                     std::shared_ptr<SimState> state);
  ~SimApiServer();
  SimApiServer(const SimApiServer&) = delete;
  SimApiServer& operator=(const SimApiServer&) = delete;

  uint16_t port() const { return port_; }
  // "http(s)://127.0.0.1:<port>"
  std::string url() const;
  SimState& state() { return *state_; }
  // Closes the listener and all connections (open watches end abruptly), joins the threads.
  void Stop();

 private:
  struct Impl;
  SimApiServer(const SimServerOptions& options, std::shared_ptr<SimState> state);

  SimServerOptions options_;
  std::shared_ptr<SimState> state_;
  uint16_t port_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dracpu::sim
