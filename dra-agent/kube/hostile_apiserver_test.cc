// The Kubernetes client (KubeClient over the real CurlHttpClient) against a hostile or broken
// API server on a loopback socket that answers every request with bytes of the test's choosing:
// bodies of 10 MiB, watches that never end (a stream of events, or one event that never closes),
// streams that are not JSON, invalid UTF-8. Each ends in a clear Status within its limits, and
// the client stays usable for the next request.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/log_escape.h"
#include "common/unique_fd.h"
#include "dra-agent/kube/curl_http_client.h"
#include "dra-agent/kube/kube_client.h"
#include "dra-agent/kube/resources.h"
#include "tests/testing/status_matchers.h"

namespace dracpu::kube {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Accepts connections on 127.0.0.1 and, for each, reads the request head and hands the socket
// to `answer`, which writes what it likes (a write failing means the client went away).
class RawServer {
 public:
  using Answer = std::function<void(int fd, const std::atomic<bool>& stop)>;
  explicit RawServer(Answer answer) : answer_(std::move(answer)) {
    listener_.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener_.get(), 8), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawServer() {
    stop_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Writes all of `bytes`; false once the client has gone.
  static bool Write(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  static bool Chunk(int fd, std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return Write(fd, size) && Write(fd, data) && Write(fd, "\r\n");
  }

 private:
  void Serve() {
    while (!stop_) {
      UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!conn) return;
      std::string head;
      char c;
      while (head.find("\r\n\r\n") == std::string::npos && ::read(conn.get(), &c, 1) == 1) {
        head += c;
      }
      answer_(conn.get(), stop_);
    }
  }

  Answer answer_;
  UniqueFd listener_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

WatchOptions WatchFor(int seconds) {
  WatchOptions o;
  o.timeout_seconds = seconds;
  return o;
}

std::string Head(int status, const std::string& extra) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n" + extra +
         "\r\n";
}

class HostileApiServerTest : public ::testing::Test {
 protected:
  std::unique_ptr<KubeClient> Client(const std::string& url, ClientOptions options = {}) {
    ClusterConfig config;
    config.server = url;
    options.max_attempts = 1;
    auto http = NewCurlHttpClient(config.tls);
    EXPECT_THAT(http, IsOk());
    auto client =
        KubeClient::Create(config, std::move(http).value(), *fs_, clock_, random_, options);
    EXPECT_THAT(client, IsOk());
    return std::move(client).value();
  }
  const std::string claim_path_ = ResourceClaimPath("ns", "c");
  std::unique_ptr<FileSystem> fs_ = NewPosixFileSystem("/").value();
  SystemClock clock_;
  DefaultRandom random_;
};

TEST_F(HostileApiServerTest, TenMiBBodyIsRefusedUnreadForAnObjectAndWithinTheListLimit) {
  const std::string big = "{\"metadata\":{\"name\":\"" + std::string(10 << 20, 'x') + "\"}}";
  RawServer server([&](int fd, const std::atomic<bool>&) {
    RawServer::Write(fd, Head(200, "Content-Length: " + std::to_string(big.size()) + "\r\n"));
    RawServer::Write(fd, big);
  });
  auto client = Client(server.url());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(client->Get(claim_path_),
              StatusIs(StatusCode::kResourceExhausted, HasSubstr("larger than 8388608 bytes")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  // A List may be larger (64 MiB by default); below its own limit it is refused the same way.
  ClientOptions small;
  small.max_list_bytes = 1 << 20;
  EXPECT_THAT(Client(server.url(), small)->List(kResourceSlicesPath),
              StatusIs(StatusCode::kResourceExhausted, HasSubstr("larger than 1048576 bytes")));
  EXPECT_THAT(client->List(kResourceSlicesPath), IsOk());
}

TEST_F(HostileApiServerTest, HugeErrorBodyIsBoundedToo) {
  RawServer server([](int fd, const std::atomic<bool>&) {
    RawServer::Write(fd, Head(500, "Transfer-Encoding: chunked\r\n"));
    const std::string piece(1 << 20, '<');
    for (int i = 0; i < 10 && RawServer::Chunk(fd, piece); ++i) {
    }
    RawServer::Chunk(fd, "");
  });
  Status s = Client(server.url())->Get(claim_path_).status();
  EXPECT_THAT(s, StatusIs(StatusCode::kResourceExhausted));
  EXPECT_LT(s.message().size(), 1000u);
}

TEST_F(HostileApiServerTest, NeverEndingWatchIsCutOffAtItsTimeout) {
  const std::string bookmark =
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
      "\n";
  RawServer server([&](int fd, const std::atomic<bool>& stop) {
    RawServer::Write(fd, Head(200, "Transfer-Encoding: chunked\r\n"));
    while (!stop && RawServer::Chunk(fd, bookmark)) std::this_thread::sleep_for(20ms);
  });
  ClientOptions options;
  options.watch_timeout_margin = 500ms;
  auto client = Client(server.url(), options);
  int events = 0;
  const auto start = std::chrono::steady_clock::now();
  Status s = client->Watch(kResourceSlicesPath, WatchFor(1), [&](const WatchEvent& e) {
    EXPECT_EQ(e.type, WatchEventType::kBookmark);
    ++events;
    return true;
  });
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(s, StatusIs(StatusCode::kDeadlineExceeded));
  EXPECT_GT(events, 5);
  EXPECT_GE(took, 1400ms);
  EXPECT_LT(took, 10s);
}

TEST_F(HostileApiServerTest, WatchEventThatNeverEndsIsRefusedAtTheObjectLimit) {
  RawServer server([](int fd, const std::atomic<bool>& stop) {
    RawServer::Write(fd, Head(200, "Transfer-Encoding: chunked\r\n"));
    RawServer::Chunk(fd, R"({"type":"ADDED","object":{"metadata":{"name":")");
    const std::string piece(64 << 10, 'a');
    while (!stop && RawServer::Chunk(fd, piece)) {
    }
  });
  ClientOptions options;
  options.max_object_bytes = 1 << 20;
  Status s = Client(server.url(), options)
                 ->Watch(kResourceSlicesPath, WatchFor(30), [](const WatchEvent&) { return true; });
  EXPECT_THAT(s, StatusIs(StatusCode::kResourceExhausted,
                          HasSubstr("an event is larger than 1048576 bytes")));
}

TEST_F(HostileApiServerTest, WatchStreamThatIsNotJsonIsDataLoss) {
  RawServer server([](int fd, const std::atomic<bool>& stop) {
    RawServer::Write(fd, Head(200, "Transfer-Encoding: chunked\r\n"));
    while (!stop && RawServer::Chunk(fd, "<html>proxy error</html>\n")) {
    }
  });
  Status s = Client(server.url())->Watch(kResourceSlicesPath, WatchFor(30), [](const WatchEvent&) {
    return true;
  });
  EXPECT_THAT(s, StatusIs(StatusCode::kDataLoss, HasSubstr("starts with \"<\"")));
}

TEST_F(HostileApiServerTest, InvalidUtf8IsRefusedWithTheOffsetAndNothingUnescaped) {
  const std::string object = "{\"metadata\":{\"name\":\"c\xff\xfe\",\"uid\":\"u\"}}";
  RawServer server([&](int fd, const std::atomic<bool>&) {
    const std::string event = "{\"type\":\"ADDED\",\"object\":" + object + "}\n";
    RawServer::Write(fd, Head(200, "Content-Length: " + std::to_string(event.size()) + "\r\n"));
    RawServer::Write(fd, event);
  });
  auto client = Client(server.url());
  Status get = client->Get(claim_path_).status();
  EXPECT_THAT(get, StatusIs(StatusCode::kInvalidArgument, HasSubstr("Invalid encoding")));
  EXPECT_THAT(get, StatusIs(StatusCode::kInvalidArgument, HasSubstr(claim_path_)));
  int events = 0;
  Status watch = client->Watch(kResourceSlicesPath, WatchFor(30),
                               [&](const WatchEvent&) { return ++events > 0; });
  EXPECT_THAT(watch, StatusIs(StatusCode::kDataLoss, HasSubstr("Invalid encoding")));
  EXPECT_EQ(events, 0);
  EXPECT_TRUE(IsLogSafe(get.message()));
  EXPECT_TRUE(IsLogSafe(watch.message()));
}

TEST_F(HostileApiServerTest, ServerMessagesAreEscapedInErrors) {
  RawServer server([](int fd, const std::atomic<bool>&) {
    const std::string body =
        R"({"kind":"Status","reason":"Bad\nReason","message":"line one\nE1201 forged log line\u001b[2J"})";
    RawServer::Write(fd, Head(422, "Content-Length: " + std::to_string(body.size()) + "\r\n"));
    RawServer::Write(fd, body);
  });
  Status s = Client(server.url())->Get(claim_path_).status();
  EXPECT_THAT(s, StatusIs(StatusCode::kInvalidArgument, HasSubstr("line one\\x0aE1201 forged")));
  EXPECT_TRUE(IsLogSafe(s.message()));
}

}  // namespace
}  // namespace dracpu::kube
