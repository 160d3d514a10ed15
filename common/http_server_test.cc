#include "common/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/metrics.h"
#include "tests/testing/status_matchers.h"

namespace dracpu {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// One plain HTTP/1.0 exchange on loopback; returns the whole response.
std::string Fetch(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  ::send(fd, request.data(), request.size(), 0);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST(HttpServer, ServesRoutesAndRefusesTheRest) {
  bool ready = false;
  auto server = HttpServer::Start(
      "127.0.0.1:0", {
                         {"/healthz",
                          [] {
                            return HttpResponse{200, "text/plain", "ok\n"};
                          }},
                         {"/readyz",
                          [&] {
                            return ready ? HttpResponse{200, "text/plain", "ready\n"}
                                         : HttpResponse{503, "text/plain", "not registered\n"};
                          }},
                     });
  ASSERT_THAT(server, IsOk());
  const int port = (*server)->port();
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
  EXPECT_THAT(Fetch(port, "garbage\r\n\r\n"), ::testing::Not(HasSubstr("200")));
  (*server)->Stop();
  (*server)->Stop();  // idempotent
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
  EXPECT_THAT(HttpServer::Start("nohost.invalid:1", {}), StatusIs(StatusCode::kInvalidArgument));
}

TEST(HttpServer, PortInUseIsReported) {
  auto first = HttpServer::Start("127.0.0.1:0", {});
  ASSERT_THAT(first, IsOk());
  auto second = HttpServer::Start("127.0.0.1:" + std::to_string((*first)->port()), {});
  EXPECT_THAT(second, StatusIs(StatusCode::kUnavailable, HasSubstr("cannot listen")));
}

TEST(Metrics, PrometheusTextFormat) {
  MetricsRegistry r;
  Metric& claims = r.AddCounter("dra_cpu_prepare_claims_total", "Claims prepared.", {"result"});
  Metric& free = r.AddGauge("dra_cpu_shared_cpus", "CPUs in the shared pool.");
  Metric& latency =
      r.AddHistogram("dra_cpu_prepare_seconds", "Prepare latency.", {}, {0.001, 0.01});
  claims.Add({"success"}, 1);
  claims.Add({"success"}, 2);
  claims.Add({"error"}, 1);
  claims.Add({"error"}, -5);  // counters never go down
  free.Set({}, 12);
  latency.Observe({}, 0.0005);
  latency.Observe({}, 0.005);
  EXPECT_EQ(claims.Value({"success"}), 3);
  EXPECT_EQ(r.RenderText(),
            "# HELP dra_cpu_prepare_claims_total Claims prepared.\n"
            "# TYPE dra_cpu_prepare_claims_total counter\n"
            "dra_cpu_prepare_claims_total{result=\"error\"} 1\n"
            "dra_cpu_prepare_claims_total{result=\"success\"} 3\n"
            "# HELP dra_cpu_shared_cpus CPUs in the shared pool.\n"
            "# TYPE dra_cpu_shared_cpus gauge\n"
            "dra_cpu_shared_cpus 12\n"
            "# HELP dra_cpu_prepare_seconds Prepare latency.\n"
            "# TYPE dra_cpu_prepare_seconds histogram\n"
            "dra_cpu_prepare_seconds_bucket{le=\"0.001\"} 1\n"
            "dra_cpu_prepare_seconds_bucket{le=\"0.01\"} 2\n"
            "dra_cpu_prepare_seconds_bucket{le=\"+Inf\"} 2\n"
            "dra_cpu_prepare_seconds_sum 0.0054999999999999997\n"
            "dra_cpu_prepare_seconds_count 2\n");
}

TEST(Metrics, UnlabelledMetricsExistAtZeroFromTheStart) {
  MetricsRegistry r;
  r.AddGauge("g", "A gauge.");
  r.AddHistogram("h", "A histogram.", {}, {1, 2});
  r.AddCounter("c_total", "Labelled: no series until used.", {"result"});
  EXPECT_EQ(
      r.RenderText(),
      "# HELP g A gauge.\n# TYPE g gauge\ng 0\n"
      "# HELP h A histogram.\n# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 0\nh_bucket{le=\"2\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n"
      "# HELP c_total Labelled: no series until used.\n# TYPE c_total counter\n");
}

TEST(Metrics, SpecsAsTheReferencesIntrospectJson) {
  const std::vector<MetricSpec> specs = {
      {Metric::Kind::kGauge, "a_cpus", "CPUs \"now\".", {}, {}},
      {Metric::Kind::kCounter, "b_total", "Results.", {"result"}, {}}};
  EXPECT_EQ(
      MetricSpecsToJson(specs),
      "[\n"
      "  {\n    \"name\": \"a_cpus\",\n    \"type\": \"gauge\",\n    \"stability\": \"ALPHA\",\n"
      "    \"help\": \"CPUs \\\"now\\\".\",\n    \"labels\": []\n  },\n"
      "  {\n    \"name\": \"b_total\",\n    \"type\": \"counter\",\n    \"stability\": \"ALPHA\",\n"
      "    \"help\": \"Results.\",\n    \"labels\": [\n      \"result\"\n    ]\n  }\n"
      "]\n");
}

}  // namespace
}  // namespace dracpu
