// Fuzz target http_request: bytes a client sends to an agent's /metrics, /healthz and /readyz
// port, through the HttpServer's parser (with its limits) and router (common/http_request.h).
// The stream is fed in two pieces (cut where the first byte says) and may hold several
// pipelined requests. Contracts: parsing does not depend on the cut (but for one thing Beast
// does by design: a malformed request line seen whole in one buffer is refused at once, while
// one that arrived in pieces is refused only once its header ends, so when the input stops
// before that, one side has refused and the other is still waiting for the header; the server
// closes that connection either way); a request over the limits
// is refused before its bytes are kept; every answer serializes to a response that parses back
// with the same status and a Content-Length equal to its body (none for HEAD), 200 only for a
// route, and a body with nothing from the request unescaped; and the server's own connection
// (HttpConnection) answers exactly those bytes and ends where they end.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <string>
#include <vector>

#include "common/http_connection.h"
#include "common/http_request.h"
#include "common/log_escape.h"
#include "tests/fuzz/fuzz_check.h"

namespace dracpu::fuzz {
namespace {

namespace http = boost::beast::http;

const std::map<std::string, HttpHandler>& Routes() {
  static const auto* routes = new std::map<std::string, HttpHandler>{
      {"/healthz",
       [] {
         return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
       }},
      {"/readyz",
       [] {
         return HttpResponse{503, "text/plain; charset=utf-8", "not ready\n"};
       }},
      {"/metrics",
       [] {
         return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n"};
       }},
  };
  return *routes;
}

struct Parsed {
  std::vector<std::string> answers;  // serialized responses
  bool failed = false;
  bool waiting = false;  // the input ended inside a request
  bool closed = false;   // an answer ended the connection
};

// What the server's connection (HttpConnection, as HttpServer runs it) answers to `pieces`:
// the same bytes as the reference loop above, and done exactly when it refused or closed.
void CheckConnection(const std::vector<std::string_view>& pieces, const Parsed& reference,
                     std::string_view input) {
  HttpConnection connection(Routes());
  std::string wire;
  for (std::string_view piece : pieces) connection.Receive(piece, wire);
  std::string expected;
  for (const std::string& a : reference.answers) expected += a;
  Check(wire == expected, "the connection answered other bytes than the parser loop", input);
  Check(connection.done() == (reference.failed || reference.closed),
        "the connection ended where the parser loop did not, or the reverse", input);
  Check(connection.answered() == reference.answers.size(), "answered count differs", input);
}

// Feeds `pieces` to parsers as the server's read loop does: one request per parser, the
// unconsumed rest carried over to the next.
Parsed Serve(const std::vector<std::string_view>& pieces, std::string_view input) {
  Parsed out;
  std::string pending;
  auto parser = std::make_unique<http_request::Parser>();
  http_request::Limit(*parser);
  size_t request_bytes = 0;  // given to the current parser
  for (std::string_view piece : pieces) {
    pending.append(piece);
    while (!pending.empty()) {
      boost::beast::error_code ec;
      const size_t used = parser->put(boost::asio::buffer(pending.data(), pending.size()), ec);
      request_bytes += used;
      if (ec == http::error::need_more) {
        pending.erase(0, used);
        break;
      }
      if (ec) {
        out.failed = true;
        return out;
      }
      pending.erase(0, used);
      if (!parser->is_done()) {
        if (used == 0) break;
        continue;
      }
      const http_request::Request& request = parser->get();
      http_request::Response response = http_request::Answer(request, Routes());
      const std::string path(request.target().substr(0, request.target().find('?')));
      Check(response.result_int() != 200 || Routes().count(path) > 0,
            "a 200 for a path that is not a route", input);
      const std::string_view body = response.body();
      Check(response.result_int() == 200 ||
                IsLogSafe(body.substr(0, body.find_last_not_of('\n') + 1)),
            "an error answer carries unescaped request bytes", input);
      std::string wire = http_request::Serialize(response);
      http::response_parser<http::string_body> back;
      back.eager(true);
      back.skip(request.method() == http::verb::head);
      boost::beast::error_code bec;
      back.put(boost::asio::buffer(wire), bec);
      if (!bec && !back.is_done()) back.put_eof(bec);
      Check(!bec && back.is_done() && back.get().result() == response.result(),
            "an answer does not parse back", input);
      if (request.method() != http::verb::head) {
        Check(back.get().body() == response.body(), "an answer's body changed on the wire", input);
      }
      const bool keep_alive = response.keep_alive();
      out.answers.push_back(std::move(wire));
      if (!keep_alive) {
        out.closed = true;
        return out;
      }
      parser = std::make_unique<http_request::Parser>();
      http_request::Limit(*parser);
      request_bytes = 0;
    }
  }
  out.waiting = !pending.empty() || request_bytes > 0;
  return out;
}

}  // namespace
}  // namespace dracpu::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dracpu;
  const std::string_view input = fuzz::AsText(data, size);
  const fuzz::Selected s = fuzz::Select(input);
  const size_t cut = s.rest.size() * s.selector / 255;
  const std::vector<std::string_view> one = {s.rest};
  const std::vector<std::string_view> two = {s.rest.substr(0, cut), s.rest.substr(cut)};
  const fuzz::Parsed whole = fuzz::Serve(one, input);
  const fuzz::Parsed split = fuzz::Serve(two, input);
  fuzz::CheckConnection(one, whole, input);
  fuzz::CheckConnection(two, split, input);
  const bool same_end =
      whole.failed == split.failed || (whole.failed ? split.waiting : whole.waiting);
  fuzz::Check(same_end && whole.answers == split.answers, "the cut changed what was parsed", input);
  return 0;
}
