#include "common/http_connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace dracpu {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::map<std::string, HttpHandler>& Routes() {
  static const auto* routes = new std::map<std::string, HttpHandler>{
      {"/healthz",
       [] {
         return HttpResponse{200, "text/plain", "ok\n"};
       }},
      {"/readyz", [] {
         return HttpResponse{503, "text/plain", "starting\n"};
       }}};
  return *routes;
}

const char kTwoRequests[] =
    "GET /healthz HTTP/1.1\r\nHost: node\r\n\r\n"
    "GET /readyz?x=1 HTTP/1.1\r\nHost: node\r\nUser-Agent: kubelet\r\n\r\n";

TEST(HttpConnection, PipelinedRequestsAreAnsweredInOrderAndKeepTheConnection) {
  HttpConnection c(Routes());
  std::string out;
  c.Receive(kTwoRequests, out);
  EXPECT_EQ(c.answered(), 2u);
  EXPECT_FALSE(c.done());
  EXPECT_FALSE(c.inside_request());
  EXPECT_THAT(out, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(out, HasSubstr("ok\nHTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_TRUE(out.ends_with("starting\n"));
}

// However the bytes are cut, the answers are the same.
TEST(HttpConnection, AnswersDoNotDependOnHowTheBytesArrive) {
  std::string whole;
  HttpConnection one(Routes());
  one.Receive(kTwoRequests, whole);
  const std::string input = kTwoRequests;
  for (size_t cut = 0; cut <= input.size(); ++cut) {
    HttpConnection c(Routes());
    std::string out;
    c.Receive(std::string_view(input).substr(0, cut), out);
    c.Receive(std::string_view(input).substr(cut), out);
    ASSERT_EQ(out, whole) << "cut at " << cut;
  }
  HttpConnection bytewise(Routes());
  std::string out;
  for (char ch : input) bytewise.Receive(std::string_view(&ch, 1), out);
  EXPECT_EQ(out, whole);
}

TEST(HttpConnection, HttpTenAndConnectionCloseEndTheConnectionAfterTheAnswer) {
  HttpConnection c(Routes());
  std::string out;
  c.Receive("GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n", out);
  EXPECT_TRUE(c.done());
  EXPECT_EQ(c.answered(), 1u);
  HttpConnection close(Routes());
  std::string closed;
  close.Receive("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", closed);
  EXPECT_TRUE(close.done());
  EXPECT_THAT(closed, HasSubstr("Connection: close"));
}

TEST(HttpConnection, MalformedOrOversizedRequestsGetNoAnswer) {
  for (const std::string& bad :
       {std::string("garbage\r\n\r\n"), "GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n",
        std::string("GET /healthz HTTP/1.1\r\nContent-Length: 5000\r\n\r\n") +
            std::string(5000, 'b')}) {
    HttpConnection c(Routes());
    std::string out;
    c.Receive(bad, out);
    EXPECT_TRUE(c.done()) << bad.substr(0, 40);
    EXPECT_EQ(out, "");
    c.Receive("GET /healthz HTTP/1.1\r\n\r\n", out);  // ignored once done
    EXPECT_EQ(out, "");
  }
}

TEST(HttpConnection, EndOfInputInsideARequest) {
  HttpConnection c(Routes());
  std::string out;
  c.Receive("GET /healthz HTTP/1.1\r\nHo", out);
  EXPECT_TRUE(c.inside_request());
  EXPECT_FALSE(c.done());
  c.ReceiveEof();
  EXPECT_TRUE(c.done());
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace dracpu
