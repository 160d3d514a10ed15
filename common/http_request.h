// The request side of HttpServer (http_server.h) apart from its sockets, so that parsing and
// routing are tested and fuzzed as they run: the parser limits and the answer to one request.
// Internal to common/ (it exposes Boost.Beast types); http_connection.cc and tests/fuzz use it.
#pragma once

#include <boost/beast/http.hpp>
#include <map>
#include <string>

#include "common/http_server.h"

namespace dracpu::http_request {

namespace http = boost::beast::http;

// A request line and headers larger than this are refused (431-like: the connection closes).
inline constexpr size_t kMaxHeaderBytes = size_t{8} * 1024;
// GET and HEAD carry no body; a request with a larger one is refused the same way.
inline constexpr size_t kMaxBodyBytes = size_t{4} * 1024;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
using Parser = http::request_parser<http::string_body>;

// Applies the limits above to a fresh parser.
void Limit(Parser& parser);

// The answer HttpServer sends to `request`: 405 for methods other than GET and HEAD, 404 for a
// path (query ignored) that is not a route, else the route's response; HEAD without the body;
// keep-alive as the request asked. The path in a 404 body is escaped.
Response Answer(const Request& request, const std::map<std::string, HttpHandler>& routes);

// The bytes of `response` on the wire (status line, headers, body as it is: empty for HEAD).
std::string Serialize(const Response& response);

}  // namespace dracpu::http_request
