#include "common/http_request.h"

#include <boost/asio/buffer.hpp>

#include "common/log_escape.h"

namespace dracpu::http_request {

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

std::string Serialize(const Response& response) {
  http::response_serializer<http::string_body> serializer(response);
  std::string wire;
  boost::beast::error_code ec;
  while (!serializer.is_done() && !ec) {
    serializer.next(ec, [&](boost::beast::error_code&, const auto& buffers) {
      for (const auto& b : buffers) wire.append(static_cast<const char*>(b.data()), b.size());
      serializer.consume(boost::asio::buffer_size(buffers));
    });
  }
  return wire;  // a string body cannot fail to serialize
}

}  // namespace dracpu::http_request
