#include "common/http_server.h"

#include <pthread.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <optional>
#include <thread>

#include "common/http_request.h"
#include "common/log_escape.h"

namespace dracpu {

namespace http_request {

void Limit(Parser& parser) {
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(kMaxBodyBytes);
}

Response Answer(const Request& request, const std::map<std::string, HttpHandler>& routes) {
  Response response;
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  response.set(http::field::server, "dracpu");
  const std::string path(request.target().substr(0, request.target().find('?')));
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    response.result(http::status::method_not_allowed);
    response.body() = "only GET and HEAD\n";
  } else if (auto it = routes.find(path); it == routes.end()) {
    response.result(http::status::not_found);
    response.body() = "not found: " + LogEscape(path) + "\n";
  } else {
    HttpResponse r = it->second();
    response.result(static_cast<unsigned>(r.status));
    response.set(http::field::content_type, r.content_type);
    response.body() = std::move(r.body);
  }
  response.prepare_payload();
  if (request.method() == http::verb::head) response.body().clear();
  return response;
}

}  // namespace http_request

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kClientTimeout = std::chrono::seconds(10);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const std::map<std::string, HttpHandler>& routes)
      : stream_(std::move(socket)), routes_(routes) {}

  void Start() { Read(); }

 private:
  void Read() {
    parser_.emplace();
    http_request::Limit(*parser_);
    stream_.expires_after(kClientTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Close();
                       self->Respond();
                     });
  }

  void Respond() {
    auto response =
        std::make_shared<http_request::Response>(http_request::Answer(parser_->get(), routes_));
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (ec || !response->keep_alive()) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http_request::Parser> parser_;
  const std::map<std::string, HttpHandler>& routes_;
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(std::map<std::string, HttpHandler> r) : routes(std::move(r)), acceptor(io) {}

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // acceptor closed
      std::make_shared<Session>(std::move(socket), routes)->Start();
      Accept();
    });
  }

  std::map<std::string, HttpHandler> routes;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::thread thread;
  int port = 0;
};

Result<BindAddress> ParseBindAddress(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("bind address \"" + text + "\" has no :port");
  }
  BindAddress out;
  out.host = text.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || out.port < 0 ||
      out.port > 65535) {
    return InvalidArgumentError("bind address \"" + text + "\": port \"" + port +
                                "\" is not a number from 0 to 65535");
  }
  return out;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& bind_address,
                                                      std::map<std::string, HttpHandler> routes) {
  ASSIGN_OR_RETURN(BindAddress addr, ParseBindAddress(bind_address));
  auto impl = std::make_unique<Impl>(std::move(routes));
  // Asio reports errors through error_code here; nothing throws past this function.
  beast::error_code ec;
  asio::ip::address ip = addr.host.empty() ? asio::ip::address(asio::ip::address_v6::any())
                                           : asio::ip::make_address(addr.host, ec);
  if (ec) return InvalidArgumentError("bind address \"" + bind_address + "\": " + ec.message());
  const tcp::endpoint endpoint(ip, static_cast<unsigned short>(addr.port));
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec && ip.is_v6() && addr.host.empty())
    impl->acceptor.set_option(asio::ip::v6_only(false), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return UnavailableError("cannot listen on " + bind_address + ": " + ec.message());
  }
  impl->port = impl->acceptor.local_endpoint(ec).port();
  impl->Accept();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    pthread_setname_np(pthread_self(), "http-server");
    raw->io.run();
  });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  asio::post(impl_->io, [this] {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->io.stop();
  });
  impl_->thread.join();
}

}  // namespace dracpu
