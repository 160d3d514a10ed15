#include "common/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/http_connection.h"
#include "common/unique_fd.h"

namespace dracpu {
namespace {

constexpr auto kClientTimeout = std::chrono::seconds(10);
constexpr size_t kMaxConnections = 64;
// Read per wake-up, so that one busy client cannot hold the loop; the level-triggered watch
// brings the rest on the next turn.
constexpr size_t kReadPerWake = size_t{64} * 1024;
// Answers a client has not read yet beyond which its requests are not read either.
constexpr size_t kMaxUnsent = size_t{256} * 1024;
// After accept fails for lack of descriptors, the listener rests this long (it stays readable,
// so a level-triggered watch would spin).
constexpr auto kAcceptPause = std::chrono::seconds(1);

Status ListenError(const std::string& bind_address, const char* what, int error) {
  return UnavailableError("cannot listen on " + bind_address + ": " + what + ": " +
                          std::strerror(error));
}

// A listening non-blocking socket on `addr`.
Result<UniqueFd> Listen(const BindAddress& addr, const std::string& bind_address) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const auto port = htons(static_cast<uint16_t>(addr.port));
  auto v4 = [&](in_addr ip) {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = port;
    a->sin_addr = ip;
    length = sizeof *a;
  };
  auto v6 = [&](in6_addr ip) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = port;
    a->sin6_addr = ip;
    length = sizeof *a;
  };
  in_addr ip4{};
  in6_addr ip6{};
  if (addr.host.empty()) {
    v6(in6addr_any);
  } else if (::inet_pton(AF_INET, addr.host.c_str(), &ip4) == 1) {
    v4(ip4);
  } else if (::inet_pton(AF_INET6, addr.host.c_str(), &ip6) == 1) {
    v6(ip6);
  } else {
    return InvalidArgumentError("bind address \"" + bind_address + "\": \"" + addr.host +
                                "\" is not an IPv4 or IPv6 address");
  }
  UniqueFd fd(::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd && addr.host.empty() && errno == EAFNOSUPPORT) {  // a kernel without IPv6
    v4(in_addr{htonl(INADDR_ANY)});
    fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  }
  if (!fd) return ListenError(bind_address, "socket", errno);
  const int on = 1;
  const int off = 0;
  if (storage.ss_family == AF_INET6 && addr.host.empty() &&
      ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) != 0) {
    return ListenError(bind_address, "IPV6_V6ONLY", errno);
  }
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) {
    return ListenError(bind_address, "SO_REUSEADDR", errno);
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    return ListenError(bind_address, "bind", errno);
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) return ListenError(bind_address, "listen", errno);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) return 0;
  if (storage.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
}

}  // namespace

struct HttpServer::Impl {
  struct Connection {
    Connection(UniqueFd socket, const std::map<std::string, HttpHandler>& routes)
        : fd(std::move(socket)), http(routes) {}
    UniqueFd fd;
    HttpConnection http;
    std::string unsent;  // answers not yet written
    size_t sent = 0;     // of `unsent`
    loop::EventLoop::WatchId watch = 0;
    loop::EventLoop::TimerId deadline = 0;
    uint32_t interest = EPOLLIN;
  };

  Impl(loop::EventLoop& l, std::map<std::string, HttpHandler> r) : loop(l), routes(std::move(r)) {}

  void Accept();
  void Serve(uint64_t id, uint32_t events);
  // Reads what the client sent and answers it; false when the connection must close now.
  bool Read(Connection& c);
  // Writes what it can of the answers; false on a write error.
  static bool Write(Connection& c);
  void ArmDeadline(uint64_t id, Connection& c);
  void Close(uint64_t id);

  loop::EventLoop& loop;
  std::map<std::string, HttpHandler> routes;
  UniqueFd listener;
  loop::EventLoop::WatchId listen_watch = 0;
  loop::EventLoop::TimerId accept_pause = 0;
  int port = 0;
  uint64_t next_id = 1;
  std::map<uint64_t, std::unique_ptr<Connection>> connections;
};

void HttpServer::Impl::Accept() {
  while (true) {
    UniqueFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        loop.Modify(listen_watch, 0).IgnoreError();
        accept_pause = loop.AddTimer(kAcceptPause, [this] {
          accept_pause = 0;
          loop.Modify(listen_watch, EPOLLIN).IgnoreError();
        });
      }
      return;  // EAGAIN: nothing more to accept
    }
    if (connections.size() >= kMaxConnections) continue;  // closed at once
    const uint64_t id = next_id++;
    auto c = std::make_unique<Connection>(std::move(fd), routes);
    auto watch = loop.Watch(c->fd.get(), EPOLLIN, [this, id](uint32_t ev) { Serve(id, ev); });
    if (!watch.ok()) continue;
    c->watch = *watch;
    ArmDeadline(id, *c);
    connections.emplace(id, std::move(c));
  }
}

void HttpServer::Impl::ArmDeadline(uint64_t id, Connection& c) {
  if (c.deadline != 0) loop.CancelTimer(c.deadline);
  c.deadline = loop.AddTimer(kClientTimeout, [this, id] {
    if (auto it = connections.find(id); it != connections.end()) it->second->deadline = 0;
    Close(id);
  });
}

bool HttpServer::Impl::Read(Connection& c) {
  char buf[16 * 1024];
  size_t taken = 0;
  while (!c.http.done() && taken < kReadPerWake && c.unsent.size() - c.sent < kMaxUnsent) {
    const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (n > 0) {
      taken += static_cast<size_t>(n);
      c.http.Receive(std::string_view(buf, static_cast<size_t>(n)), c.unsent);
    } else if (n == 0) {
      c.http.ReceiveEof();
    } else if (errno == EINTR) {
      continue;
    } else {
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  }
  return true;
}

bool HttpServer::Impl::Write(Connection& c) {
  while (c.sent < c.unsent.size()) {
    const ssize_t n =
        ::send(c.fd.get(), c.unsent.data() + c.sent, c.unsent.size() - c.sent, MSG_NOSIGNAL);
    if (n >= 0) {
      c.sent += static_cast<size_t>(n);
    } else if (errno == EINTR) {
      continue;
    } else {
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  }
  c.unsent.clear();
  c.sent = 0;
  return true;
}

void HttpServer::Impl::Serve(uint64_t id, uint32_t events) {
  auto it = connections.find(id);
  if (it == connections.end()) return;
  Connection& c = *it->second;
  const size_t answered = c.http.answered();
  if ((events & EPOLLERR) != 0) return Close(id);
  if ((events & (EPOLLIN | EPOLLHUP)) != 0 && !Read(c)) return Close(id);
  if (!Write(c)) return Close(id);
  const bool unsent = c.sent < c.unsent.size();
  if (c.http.done() && !unsent) return Close(id);
  // Each request gets its own 10 s, as a client that is still reading its answer does.
  if (c.http.answered() != answered) ArmDeadline(id, c);
  uint32_t interest = unsent ? static_cast<uint32_t>(EPOLLOUT) : 0u;
  if (!c.http.done() && c.unsent.size() - c.sent < kMaxUnsent) interest |= EPOLLIN;
  if (interest != c.interest && loop.Modify(c.watch, interest).ok()) c.interest = interest;
}

void HttpServer::Impl::Close(uint64_t id) {
  auto it = connections.find(id);
  if (it == connections.end()) return;
  loop.Unwatch(it->second->watch);
  if (it->second->deadline != 0) loop.CancelTimer(it->second->deadline);
  connections.erase(it);  // closes the socket
}

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

Result<std::unique_ptr<HttpServer>> HttpServer::Start(loop::EventLoop& loop,
                                                      const std::string& bind_address,
                                                      std::map<std::string, HttpHandler> routes) {
  ASSIGN_OR_RETURN(BindAddress addr, ParseBindAddress(bind_address));
  auto impl = std::make_unique<Impl>(loop, std::move(routes));
  ASSIGN_OR_RETURN(impl->listener, Listen(addr, bind_address));
  impl->port = BoundPort(impl->listener.get());
  Impl* raw = impl.get();
  ASSIGN_OR_RETURN(impl->listen_watch,
                   loop.Watch(impl->listener.get(), EPOLLIN, [raw](uint32_t) { raw->Accept(); }));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::port() const { return impl_->port; }

void HttpServer::Stop() {
  if (!impl_->listener) return;
  while (!impl_->connections.empty()) impl_->Close(impl_->connections.begin()->first);
  impl_->loop.Unwatch(impl_->listen_watch);
  if (impl_->accept_pause != 0) impl_->loop.CancelTimer(impl_->accept_pause);
  impl_->listener = UniqueFd();
}

}  // namespace dracpu
