#include "tests/sim/apiserver/sim_apiserver.h"

#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <set>

namespace dracpu::sim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

struct SimApiServer::Impl {
  asio::io_context io;
  std::unique_ptr<asio::ssl::context> tls;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};

  std::mutex mu;
  std::set<int> open_fds;    // guarded by mu; shut down on Stop
  uint64_t connections = 0;  // guarded by mu
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Worker> workers;  // guarded by mu

  // Joins workers whose connection has ended, so a long-running simulator does not accumulate
  // finished threads. mu held.
  void ReapLocked() {
    for (auto it = workers.begin(); it != workers.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers.erase(it);
      } else {
        ++it;
      }
    }
  }
};

namespace {

constexpr size_t kMaxBodyBytes = 16 << 20;

void SplitTarget(const std::string& target, std::string* path, std::string* query) {
  const size_t q = target.find('?');
  *path = target.substr(0, q);
  *query = q == std::string::npos ? "" : target.substr(q + 1);
}

template <typename Stream>
bool WriteChunk(Stream& stream, const std::string& data) {
  beast::error_code ec;
  asio::write(stream, http::make_chunk(asio::buffer(data)), ec);
  return !ec;
}

std::string Bookmark(int64_t rv) {
  return "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ResourceSlice\",\"apiVersion\":"
         "\"resource.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"" +
         std::to_string(rv) + "\"}}}\n";
}

std::string ExpiredEvent(const std::string& message) {
  return "{\"type\":\"ERROR\",\"object\":" + SimState::StatusJson(410, "Expired", message) + "}\n";
}

template <typename Stream>
void ServeWatch(Stream& stream, SimState& state, const SimRequest& request,
                const SimServerOptions& options, const std::atomic<bool>& stopping,
                RecordedRequest record) {
  SimState::WatchStart start = state.StartWatch(request.target);
  if (start.error) {
    record.status = start.error->status;
    state.Record(record);
    http::response<http::string_body> res{static_cast<http::status>(start.error->status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = start.error->body;
    res.prepare_payload();
    beast::error_code ec;
    http::write(stream, res, ec);
    return;
  }
  record.status = 200;
  state.Record(record);
  http::response<http::empty_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "application/json");
  res.chunked(true);
  http::response_serializer<http::empty_body> serializer{res};
  beast::error_code ec;
  http::write_header(stream, serializer, ec);
  if (ec) return;
  if (start.expired) {
    WriteChunk(stream, ExpiredEvent(start.expired_message));
    asio::write(stream, http::make_chunk_last(), ec);
    return;
  }
  for (const SimWatchEvent& e : start.initial) {
    if (!WriteChunk(stream, "{\"type\":\"ADDED\",\"object\":" + e.object_json + "}\n")) return;
  }
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = start.timeout_seconds > 0
                            ? now + std::chrono::seconds(start.timeout_seconds)
                            : std::chrono::steady_clock::time_point::max();
  auto next_bookmark = now + options.bookmark_interval;
  int64_t after = start.after;
  uint64_t expire_epoch = start.expire_epoch;
  uint64_t bookmark_epoch = start.bookmark_epoch;
  while (!stopping.load()) {
    const auto t = std::chrono::steady_clock::now();
    if (t >= deadline) break;
    // Wake at least every 200 ms to notice Stop().
    const auto until = std::min({deadline, next_bookmark, t + std::chrono::milliseconds(200)});
    SimState::WatchWake wake = state.WaitForEvents(start.selector, &after, &expire_epoch,
                                                   &bookmark_epoch, start.drop_epoch, until);
    // An abrupt end (no final chunk), as when the server dies or the network fails.
    if (stopping.load() || wake.dropped) return;
    for (const SimWatchEvent& e : wake.events) {
      if (!WriteChunk(stream, "{\"type\":\"" + e.type + "\",\"object\":" + e.object_json + "}\n")) {
        return;
      }
    }
    if (wake.expired) {
      WriteChunk(stream, ExpiredEvent("too old resource version"));
      break;
    }
    const auto t2 = std::chrono::steady_clock::now();
    if (start.bookmarks && (wake.bookmark || t2 >= next_bookmark)) {
      if (!WriteChunk(stream,
                      Bookmark(after > wake.resource_version ? after : wake.resource_version))) {
        return;
      }
    }
    if (t2 >= next_bookmark) next_bookmark = t2 + options.bookmark_interval;
  }
  asio::write(stream, http::make_chunk_last(), ec);
}

template <typename Stream>
void ServeConnection(Stream& stream, SimState& state, const SimServerOptions& options,
                     const std::atomic<bool>& stopping, uint64_t connection) {
  beast::flat_buffer buffer;
  while (!stopping.load()) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    beast::error_code ec;
    http::read(stream, buffer, parser, ec);
    if (ec) return;
    const http::request<http::string_body>& req = parser.get();
    SimRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    request.authorization = std::string(req[http::field::authorization]);
    request.body = req.body();
    RecordedRequest record;
    record.method = request.method;
    SplitTarget(request.target, &record.path, &record.query);
    record.authorization = request.authorization;
    record.body = request.body;
    record.connection = connection;

    std::optional<Fault> fault = state.TakeFault(request.method, request.target);
    if (fault && fault->action == FaultAction::kDelay) {
      const auto until = std::chrono::steady_clock::now() + fault->delay;
      // In slices of at most 10 ms (a stop ends the wait), the last one only what is left, so a
      // 1 ms delay is 1 ms.
      for (auto now = std::chrono::steady_clock::now(); !stopping.load() && now < until;
           now = std::chrono::steady_clock::now()) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            std::chrono::milliseconds(10), until - now));
      }
      fault.reset();
    }
    SimResponse response;
    if (fault && fault->action == FaultAction::kDropConnection) {
      state.Record(record);  // status 0: no answer
      return;
    }
    if (fault) {
      response.status = fault->status;
      response.body =
          SimState::StatusJson(fault->status, fault->reason, "injected fault: " + fault->reason);
      response.retry_after = fault->retry_after;
    } else if (std::optional<SimResponse> denied = state.CheckAuth(request)) {
      response = *denied;
    } else if (SimState::IsWatch(request.target) && request.method == "GET") {
      ServeWatch(stream, state, request, options, stopping, record);
      return;  // a watch owns its connection to the end
    } else {
      response = state.Handle(request);
    }
    record.status = response.status;
    state.Record(record);
    http::response<http::string_body> res{static_cast<http::status>(response.status),
                                          req.version()};
    res.set(http::field::content_type, "application/json");
    if (!response.retry_after.empty()) res.set(http::field::retry_after, response.retry_after);
    for (const std::string& w : response.warnings) {
      res.insert(http::field::warning, "299 - \"" + w + "\"");
    }
    res.keep_alive(req.keep_alive());
    res.body() = std::move(response.body);
    res.prepare_payload();
    http::write(stream, res, ec);
    if (ec || !req.keep_alive()) return;
  }
}

}  // namespace

SimApiServer::SimApiServer(const SimServerOptions& options, std::shared_ptr<SimState> state)
    : options_(options), state_(std::move(state)), impl_(std::make_unique<Impl>()) {}

SimApiServer::~SimApiServer() { Stop(); }

std::string SimApiServer::url() const {
  return std::string(impl_->tls ? "https://" : "http://") + options_.address + ":" +
         std::to_string(port_);
}

Result<std::unique_ptr<SimApiServer>> SimApiServer::Start(const SimServerOptions& options,
                                                          std::shared_ptr<SimState> state) {
  std::unique_ptr<SimApiServer> server(new SimApiServer(options, std::move(state)));
  Impl& impl = *server->impl_;
  boost::system::error_code ec;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    impl.tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    impl.tls->use_certificate_chain_file(options.tls_cert_file, ec);
    if (ec)
      return InvalidArgumentError("TLS certificate " + options.tls_cert_file + ": " + ec.message());
    impl.tls->use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) return InvalidArgumentError("TLS key " + options.tls_key_file + ": " + ec.message());
    if (!options.client_ca_file.empty()) {
      impl.tls->load_verify_file(options.client_ca_file, ec);
      if (ec)
        return InvalidArgumentError("client CA " + options.client_ca_file + ": " + ec.message());
      impl.tls->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
    }
  }
  const asio::ip::address address = asio::ip::make_address(options.address, ec);
  if (ec) return InvalidArgumentError("listen address " + options.address + ": " + ec.message());
  impl.acceptor = std::make_unique<tcp::acceptor>(impl.io);
  const tcp::endpoint endpoint(address, options.port);
  impl.acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl.acceptor->bind(endpoint, ec);
  if (!ec) impl.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return UnavailableError("listen on " + options.address + ":" + std::to_string(options.port) +
                            ": " + ec.message());
  }
  server->port_ = impl.acceptor->local_endpoint().port();
  SimApiServer* self = server.get();
  impl.accept_thread = std::thread([self] {
    Impl& im = *self->impl_;
    while (!im.stopping.load()) {
      tcp::socket socket(im.io);
      boost::system::error_code aec;
      im.acceptor->accept(socket, aec);
      if (aec || im.stopping.load()) break;
      const int fd = socket.native_handle();
      std::lock_guard<std::mutex> lock(im.mu);
      im.ReapLocked();
      im.open_fds.insert(fd);
      // Stop() may have shut the open fds down between accept() and here.
      if (im.stopping.load()) ::shutdown(fd, SHUT_RDWR);
      auto done = std::make_shared<std::atomic<bool>>(false);
      const uint64_t connection = ++im.connections;
      std::thread worker([self, fd, done, connection, s = std::move(socket)]() mutable {
        Impl& i = *self->impl_;
        SimState& st = *self->state_;
        if (i.tls) {
          asio::ssl::stream<tcp::socket&> tls_stream(s, *i.tls);
          boost::system::error_code hec;
          tls_stream.handshake(asio::ssl::stream_base::server, hec);
          if (!hec) ServeConnection(tls_stream, st, self->options_, i.stopping, connection);
        } else {
          ServeConnection(s, st, self->options_, i.stopping, connection);
        }
        {
          std::lock_guard<std::mutex> l(i.mu);
          i.open_fds.erase(fd);
        }
        boost::system::error_code cec;
        s.shutdown(tcp::socket::shutdown_both, cec);
        s.close(cec);
        done->store(true);
      });
      im.workers.push_back({std::move(worker), done});
    }
  });
  return server;
}

void SimApiServer::Stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  // shutdown(2) on the native fds unblocks accept() and the blocking reads of other threads;
  // asio objects are not touched from this thread while they are in use.
  if (impl_->acceptor == nullptr) return;  // Start() failed before listening
  ::shutdown(impl_->acceptor->native_handle(), SHUT_RDWR);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (int fd : impl_->open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  state_->WakeAll();
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  std::list<Impl::Worker> workers;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    workers.swap(impl_->workers);
  }
  for (Impl::Worker& w : workers) w.thread.join();
  boost::system::error_code ec;
  impl_->acceptor->close(ec);
}

}  // namespace dracpu::sim
