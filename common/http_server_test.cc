#include "common/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <vector>

#include "common/unique_fd.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/loop_thread.h"
#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace std::chrono_literals;

UniqueFd Connect(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

// Sends `request` and reads until the server closes; returns the whole response.
std::string Fetch(int port, const std::string& request) {
  UniqueFd fd = Connect(port);
  if (!fd) return "connect failed";
  ::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// A server on a loop thread (the test thread is the client).
struct Served {
  testing::LoopThread thread;
  std::unique_ptr<HttpServer> server;

  explicit Served(std::map<std::string, HttpHandler> routes) {
    auto s = thread.Call([&] { return HttpServer::Start(thread.loop(), "127.0.0.1:0", routes); });
    EXPECT_THAT(s, IsOk());
    if (s.ok()) server = std::move(s).value();
  }
  ~Served() {
    thread.Call([this] { server.reset(); });
  }
  int port() const { return server ? server->port() : 0; }
};

TEST(HttpServer, ServesRoutesAndRefusesTheRest) {
  std::atomic<bool> ready = false;
  Served s({{"/healthz",
             [] {
               return HttpResponse{200, "text/plain", "ok\n"};
             }},
            {"/readyz", [&] {
               return ready ? HttpResponse{200, "text/plain", "ready\n"}
                            : HttpResponse{503, "text/plain", "not registered\n"};
             }}});
  const int port = s.port();
  ASSERT_GT(port, 0);
  EXPECT_THAT(Fetch(port, "GET /healthz HTTP/1.0\r\n\r\n"),
              AllOf(StartsWith("HTTP/1.0 200"), HasSubstr("ok\n")));
  EXPECT_THAT(Fetch(port, "GET /readyz HTTP/1.0\r\n\r\n"),
              AllOf(StartsWith("HTTP/1.0 503"), HasSubstr("not registered")));
  ready = true;
  EXPECT_THAT(Fetch(port, "GET /readyz?verbose HTTP/1.0\r\n\r\n"), StartsWith("HTTP/1.0 200"));
  EXPECT_THAT(Fetch(port, "GET /nope HTTP/1.0\r\n\r\n"), StartsWith("HTTP/1.0 404"));
  EXPECT_THAT(Fetch(port, "POST /healthz HTTP/1.0\r\nContent-Length: 0\r\n\r\n"),
              StartsWith("HTTP/1.0 405"));
  EXPECT_EQ(Fetch(port, "garbage\r\n\r\n"), "");  // refused: closed without an answer
  EXPECT_EQ(Fetch(port, "GET /" + std::string(9000, 'a') + " HTTP/1.0\r\n\r\n"), "");
  s.thread.Call([&] {
    s.server->Stop();
    s.server->Stop();  // idempotent
  });
  EXPECT_EQ(Fetch(port, "GET /healthz HTTP/1.0\r\n\r\n"), "connect failed");
}

// HTTP/1.1 keeps the connection: pipelined requests in one write are answered in order, and
// the connection closes after the one that asks for it.
TEST(HttpServer, KeepAliveAndPipelinedRequests) {
  int calls = 0;
  Served s({{"/metrics", [&] {
               return HttpResponse{200, "text/plain", std::to_string(++calls)};
             }}});
  const std::string out = Fetch(s.port(),
                                "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
                                "HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
                                "GET /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                                "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_THAT(out, StartsWith("HTTP/1.1 200 OK\r\n"));
  size_t answers = 0;
  for (size_t at = 0; (at = out.find("HTTP/1.1 200", at)) != std::string::npos; ++at) ++answers;
  EXPECT_EQ(answers, 3u);
  EXPECT_EQ(calls, 3);  // HEAD runs the handler too; the request after "close" is not read
  EXPECT_THAT(out, HasSubstr("\r\n\r\n1HTTP/1.1"));
  EXPECT_TRUE(out.ends_with("\r\n\r\n3"));
}

TEST(HttpServer, BindAddresses) {
  EXPECT_THAT(ParseBindAddress(":8080"), IsOkAndHolds(::testing::Field(&BindAddress::port, 8080)));
  EXPECT_THAT(ParseBindAddress("[::1]:9090"),
              IsOkAndHolds(::testing::Field(&BindAddress::host, "::1")));
  EXPECT_THAT(ParseBindAddress("8080"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("no :port")));
  EXPECT_THAT(ParseBindAddress(":http"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not a number")));
  EXPECT_THAT(ParseBindAddress(":70000"), StatusIs(StatusCode::kInvalidArgument));
  auto loop = loop::EventLoop::Create(testing::RealClock()).value();
  EXPECT_THAT(HttpServer::Start(*loop, "nohost.invalid:1", {}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("not an IPv4 or IPv6 address")));
  // Every address, IPv6 and IPv4 both, as ":port" means.
  auto any = HttpServer::Start(*loop, ":0", {});
  ASSERT_THAT(any, IsOk());
  EXPECT_GT((*any)->port(), 0);
}

TEST(HttpServer, PortInUseIsReported) {
  auto loop = loop::EventLoop::Create(testing::RealClock()).value();
  auto first = HttpServer::Start(*loop, "127.0.0.1:0", {});
  ASSERT_THAT(first, IsOk());
  auto second = HttpServer::Start(*loop, "127.0.0.1:" + std::to_string((*first)->port()), {});
  EXPECT_THAT(second, StatusIs(StatusCode::kUnavailable, HasSubstr("cannot listen")));
}

// Driven by hand on virtual time: a client that does not finish its request in 10 s is
// dropped, and connections beyond 64 are closed as they are accepted.
class HttpServerOnFakeTime : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_ = loop::EventLoop::Create(clock_).value();
    server_ = HttpServer::Start(*loop_, "127.0.0.1:0",
                                {{"/healthz",
                                  [] {
                                    return HttpResponse{200, "text/plain", "ok"};
                                  }}})
                  .value();
  }
  void Turn() {
    for (int i = 0; i < 4; ++i) ASSERT_THAT(loop_->RunOnce(0ms), IsOk());
  }
  // What the server sent on `fd` so far; "EOF" appended when it closed.
  static std::string Received(int fd) {
    std::string out;
    char buf[4096];
    while (true) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
      } else {
        if (n == 0) out += "EOF";
        return out;
      }
    }
  }

  testing::FakeClock clock_;
  std::unique_ptr<loop::EventLoop> loop_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerOnFakeTime, ASlowClientIsDroppedAfterTenSeconds) {
  UniqueFd slow = Connect(server_->port());
  UniqueFd quick = Connect(server_->port());
  ::send(slow.get(), "GET /heal", 9, MSG_NOSIGNAL);
  Turn();
  clock_.Advance(9s);
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n";
  ::send(quick.get(), request.data(), request.size(), MSG_NOSIGNAL);
  Turn();
  EXPECT_THAT(Received(quick.get()), StartsWith("HTTP/1.1 200"));  // its 10 s start again
  clock_.Advance(2s);
  Turn();
  EXPECT_EQ(Received(slow.get()), "EOF");
  EXPECT_EQ(Received(quick.get()), "");  // still open: 2 s into its second request
  clock_.Advance(9s);
  Turn();
  EXPECT_EQ(Received(quick.get()), "EOF");
}

TEST_F(HttpServerOnFakeTime, AtMost64ConnectionsAtOnce) {
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 65; ++i) clients.push_back(Connect(server_->port()));
  Turn();
  int closed = 0;
  for (const UniqueFd& c : clients) closed += Received(c.get()) == "EOF" ? 1 : 0;
  EXPECT_EQ(closed, 1);
  clients.erase(clients.begin(), clients.begin() + 10);  // ten leave
  Turn();
  UniqueFd late = Connect(server_->port());
  const std::string request = "GET /healthz HTTP/1.0\r\n\r\n";
  ::send(late.get(), request.data(), request.size(), MSG_NOSIGNAL);
  Turn();
  EXPECT_THAT(Received(late.get()), AllOf(StartsWith("HTTP/1.0 200"), HasSubstr("EOF")));
}

}  // namespace
}  // namespace dracpu
